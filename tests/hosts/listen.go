package hosts

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listen opens a listener inside the host's network namespace from the
// calling process (for example an HTTP server a test runs "on" the host).
// The listener belongs to the host's network: only other hosts of the
// network can reach it.
func (h *Host) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The socket is created on this OS thread, switched into the host's
		// network namespace. The thread is only returned to the scheduler
		// if it could be switched back; otherwise it dies with the goroutine.
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + h.NetNS)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer target.Close()
		if err := setns(target, syscall.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, network, address)
		if setns(orig, syscall.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{l, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("cannot listen on host %q: %w", h.Name, r.err)
	}
	return r.l, nil
}

func setns(f *os.File, nstype int) error {
	if err := unix.Setns(int(f.Fd()), nstype); err != nil {
		return fmt.Errorf("cannot enter namespace: %w", err)
	}
	return nil
}
