package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/service/systemd"
	"github.com/charmed-slurm/operators/libs/slurm"
)

func main() {
	ev, err := juju.ReadEvent(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hc := juju.NewHookContext(ev, juju.ExecRunner{})
	backend, socket := service.Detect(os.LookupEnv, nil)
	mungeService := "munged"
	if backend == service.Systemd {
		mungeService = "munge" // Debian's munge.service
	}
	mgr := &lazyManager{backend: backend, socket: socket}
	defer mgr.close()
	stateFilePath := ""
	if ev.CharmDir != "" {
		// Per unit, also when several units share a file system.
		stateFilePath = filepath.Join(ev.CharmDir, stateFileName)
	}
	c := &Charm{
		Root:         "/",
		StateFile:    stateFilePath,
		Slurm:        slurm.ExecRunner{},
		Services:     mgr,
		MungeService: mungeService,
		Hostname:     os.Hostname,
		LookPath:     defaultLookPath(exec.LookPath),
		Rand:         rand.Reader,
		PollInterval: time.Second,
		DepartWait:   10 * time.Second,
		RemoveWait:   3 * time.Minute,
		DeleteWait:   time.Minute,
	}
	code := juju.Main(context.Background(), hc, c.Router().Dispatch, os.Stderr)
	mgr.close()
	os.Exit(code)
}

// lazyManager connects to the host's service manager on first use, so hooks and actions that
// need no service never fail for want of one.
type lazyManager struct {
	backend service.Backend
	socket  string
	once    sync.Once
	m       service.Manager
	err     error
	closeFn func()
}

func (l *lazyManager) get(ctx context.Context) (service.Manager, error) {
	l.once.Do(func() {
		switch l.backend {
		case service.Pebble:
			l.m, l.err = pebble.New(l.socket)
		default:
			m, conn, err := systemd.New(ctx)
			if err == nil {
				l.m, l.closeFn = m, conn.Close
			}
			l.err = err
		}
		if l.err != nil {
			l.err = fmt.Errorf("cannot connect to the service manager (%s): %w", l.backend, l.err)
		}
	})
	return l.m, l.err
}

func (l *lazyManager) close() {
	if l.closeFn != nil {
		l.closeFn()
		l.closeFn = nil
	}
}

func (l *lazyManager) Configure(ctx context.Context, spec service.Spec) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Configure(ctx, spec)
}

func (l *lazyManager) Enable(ctx context.Context, name string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Enable(ctx, name)
}

func (l *lazyManager) Disable(ctx context.Context, name string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Disable(ctx, name)
}

func (l *lazyManager) Start(ctx context.Context, name string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Start(ctx, name)
}

func (l *lazyManager) Stop(ctx context.Context, name string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Stop(ctx, name)
}

func (l *lazyManager) Restart(ctx context.Context, name string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Restart(ctx, name)
}

func (l *lazyManager) Status(ctx context.Context, name string) (service.Status, error) {
	m, err := l.get(ctx)
	if err != nil {
		return service.Status{}, err
	}
	return m.Status(ctx, name)
}
