package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/canonical/pebble/client"

	"github.com/charmed-slurm/operators/libs/poll"
)

// MungeLayer is the Pebble layer StartMunge adds (label "munge"): munged in
// the foreground as the munge user with Debian's default paths
// (/etc/munge/munge.key, socket /run/munge/munge.socket.2).
const MungeLayer = `summary: munge authentication daemon
services:
  munged:
    override: replace
    summary: MUNGE authentication service
    command: munged --foreground
    user: munge
    group: munge
    startup: enabled
    on-failure: restart
`

// StartMunge writes key as the host's /etc/munge/munge.key (mode 0400, owned
// by the munge user) and starts munged through the host's Pebble, then checks
// that a credential made on the host decodes there. Hosts given the same key
// accept each other's credentials.
func StartMunge(ctx context.Context, h *Host, key []byte) error {
	if len(key) < 32 {
		return fmt.Errorf("cannot start munge on host %q: key too short (%d bytes, want at least 32)", h.Name, len(key))
	}
	u, err := user.Lookup("munge")
	if err != nil {
		return fmt.Errorf("cannot start munge on host %q: %w", h.Name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	path := h.Path("/etc/munge/munge.key")
	os.Remove(path)
	if err := os.WriteFile(path, key, 0o400); err != nil {
		return fmt.Errorf("cannot write munge key on host %q: %w", h.Name, err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("cannot write munge key on host %q: %w", h.Name, err)
	}
	c, err := client.New(&client.Config{Socket: h.PebbleSocket()})
	if err != nil {
		return fmt.Errorf("cannot start munge on host %q: %w", h.Name, err)
	}
	if err := c.AddLayer(&client.AddLayerOptions{Label: "munge", Combine: true, LayerData: []byte(MungeLayer)}); err != nil {
		return fmt.Errorf("cannot start munge on host %q: %w", h.Name, err)
	}
	id, err := c.Restart(&client.ServiceOptions{Names: []string{"munged"}})
	if err != nil {
		return fmt.Errorf("cannot start munge on host %q: %w", h.Name, err)
	}
	chg, err := c.WaitChange(id, nil)
	if err != nil {
		return fmt.Errorf("cannot start munge on host %q: %w", h.Name, err)
	}
	if chg.Err != "" {
		log, _ := os.ReadFile(h.Path("/var/log/munge/munged.log"))
		return fmt.Errorf("cannot start munge on host %q: %s; munged.log: %s", h.Name, chg.Err, bytes.TrimSpace(log))
	}
	// Pebble's change ends once munged has run for a second, which on a loaded machine is not
	// always long enough for it to open its socket: ask for a credential until it answers.
	var cred []byte
	var last error
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := poll.Until(wctx, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		cred, last = h.Run(ctx, "munge", "-n")
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("cannot start munge on host %q: munged does not answer: %w", h.Name, errors.Join(last, err))
	}
	cmd := h.Command(ctx, []string{"unmunge"})
	cmd.Stdin = bytes.NewReader(cred)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot start munge on host %q: credential check failed: %v: %s", h.Name, err, out)
	}
	return nil
}
