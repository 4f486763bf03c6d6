package hosts

import (
	"context"
	"fmt"
)

// SFTPServer is OpenSSH's sftp-server serving a directory of a host over plain TCP (socat
// forking one sftp-server per connection): a network filesystem for the sshfs clients of the
// filesystem-client stand-in (tests/charms/filesystem-client). No authentication: test
// networks only.
type SFTPServer struct {
	// Endpoint is the share as the stand-in's endpoint option takes it: sftp://ADDR:PORT/DIR.
	Endpoint string
	stop     func()
}

// ServeSFTP creates dir inside the host and serves it on the host's address and port until
// Close, ctx's end or the host's.
func (h *Host) ServeSFTP(ctx context.Context, dir string, port int) (*SFTPServer, error) {
	if out, err := h.Run(ctx, "mkdir", "-p", dir); err != nil {
		return nil, fmt.Errorf("cannot create %s on %s: %w: %s", dir, h.Name, err, out)
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := h.Command(ctx, []string{"socat", fmt.Sprintf("TCP-LISTEN:%d,fork,reuseaddr,bind=%s", port, h.Addr), "EXEC:/usr/lib/openssh/sftp-server"})
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("cannot start the sftp server on %s: %w", h.Name, err)
	}
	return &SFTPServer{
		Endpoint: fmt.Sprintf("sftp://%s:%d%s", h.Addr, port, dir),
		// The end of ctx kills socat, not only nsenter (Command).
		stop: func() { cancel(); cmd.Wait() },
	}, nil
}

// Close stops the server.
func (s *SFTPServer) Close() { s.stop() }
