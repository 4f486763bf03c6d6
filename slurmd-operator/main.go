package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/service/systemd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ev, err := juju.ReadEvent(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hc := juju.NewHookContext(ev, juju.ExecRunner{})
	backend, socket := service.Detect(os.LookupEnv, nil)
	munge := "munged"
	if backend == service.Systemd {
		munge = "munge" // Debian's unit
	}
	c := &Charm{
		Runner:       slurm.ExecRunner{},
		Services:     &lazyManager{backend: backend, socket: socket},
		MungeService: munge,
		Root:         "/",
	}
	code := juju.Main(ctx, hc, c.Router().Dispatch, os.Stderr)
	stop()
	os.Exit(code)
}

// lazyManager connects to the service manager on first use, so hooks that manage no service
// (most of them) never pay for it.
type lazyManager struct {
	backend service.Backend
	socket  string
	once    sync.Once
	m       service.Manager
	err     error
}

func (l *lazyManager) get(ctx context.Context) (service.Manager, error) {
	l.once.Do(func() {
		switch l.backend {
		case service.Pebble:
			l.m, l.err = pebble.New(l.socket)
		default:
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var m *systemd.Manager
			m, _, l.err = systemd.New(cctx)
			l.m = m
		}
		if l.err != nil {
			l.err = fmt.Errorf("cannot connect to %s: %w", l.backend, l.err)
		}
	})
	return l.m, l.err
}

func (l *lazyManager) Configure(ctx context.Context, spec service.Spec) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Configure(ctx, spec)
}

func (l *lazyManager) do(ctx context.Context, name string, f func(service.Manager) error) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return f(m)
}

func (l *lazyManager) Enable(ctx context.Context, name string) error {
	return l.do(ctx, name, func(m service.Manager) error { return m.Enable(ctx, name) })
}

func (l *lazyManager) Disable(ctx context.Context, name string) error {
	return l.do(ctx, name, func(m service.Manager) error { return m.Disable(ctx, name) })
}

func (l *lazyManager) Start(ctx context.Context, name string) error {
	return l.do(ctx, name, func(m service.Manager) error { return m.Start(ctx, name) })
}

func (l *lazyManager) Stop(ctx context.Context, name string) error {
	return l.do(ctx, name, func(m service.Manager) error { return m.Stop(ctx, name) })
}

func (l *lazyManager) Restart(ctx context.Context, name string) error {
	return l.do(ctx, name, func(m service.Manager) error { return m.Restart(ctx, name) })
}

func (l *lazyManager) Status(ctx context.Context, name string) (service.Status, error) {
	var st service.Status
	err := l.do(ctx, name, func(m service.Manager) (err error) { st, err = m.Status(ctx, name); return err })
	return st, err
}
