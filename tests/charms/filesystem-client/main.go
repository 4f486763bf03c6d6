// Command filesystem-client is a test-only stand-in of charmed-hpc's filesystem-client charm
// on the charm kit: a subordinate that mounts an sshfs share where its principal asks through
// the mount_info interface (interfaces/mountinfo) and reports the mount to it, as the real
// charm does with NFS, CephFS or Lustre. See charmcraft.yaml.
//
// It unmounts as the real charm (charmed-hpc/filesystem-charms, src/charm.py and
// src/utils/manager.py) does: never when its principal or its relations go. The real charm
// mounts through an autofs direct map and handles relation-changed of `mount` (and config,
// update-status, upgrade, its filesystem relation) only: no handler for the relation's
// departure, stop or remove. A pass that cannot mount (no request, no filesystem) reports
// "not mounted" to the principal but leaves the map, and the mount, as they were (the error
// leaves its `mounts()` context before the map is written); only a pass that mounts rewrites
// the map, replacing an earlier different mount. So the share stays mounted until the machine
// goes, after the principal's hooks: a controller leaving saves its state on it (docs/ha.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/poll"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/auto"
)

const (
	serviceName = "filesystem-client-sshfs"
	stateName   = ".filesystem-client-test-charm-state.json"
	// mountWait bounds the wait for sshfs's mount to show in the mount table.
	mountWait = 15 * time.Second
)

// state is what the charm remembers: the sshfs command it runs and where it mounts.
type state struct {
	charm.StatusCache
	Command    []string `json:"command,omitempty"`
	Mountpoint string   `json:"mountpoint,omitempty"`
}

type cfg struct {
	Endpoint   string `json:"endpoint"`
	Mountpoint string `json:"mountpoint"`
	NoExec     bool   `json:"noexec"`
	NoSUID     bool   `json:"nosuid"`
	NoDev      bool   `json:"nodev"`
	ReadOnly   bool   `json:"read-only"`
}

type client struct {
	services service.Manager
	run      command.Exec
	// mountTable is the path of the mount table read to tell whether the share is mounted.
	mountTable string
}

func main() {
	charm.Main(charm.WithServices(os.LookupEnv, func(_ juju.Event, services *auto.Manager) juju.Handler {
		c := &client{services: withUnitFile(services), run: command.Exec{Timeout: time.Minute}, mountTable: "/proc/self/mountinfo"}
		return c.router(charm.Lifecycle[state]{StateName: stateName}).Dispatch
	}))
}

// router routes the hooks the real charm observes to reconcile: nothing on the mount
// relation's departure, stop or remove (TestNoUnmountOnDeparture).
func (c *client) router(lc charm.Lifecycle[state]) *juju.Router {
	r := juju.NewRouter()
	for _, k := range []juju.Kind{juju.Install, juju.ConfigChanged, juju.Start, juju.UpgradeCharm, juju.UpdateStatus} {
		r.Handle(k, lc.Handler(c.reconcile))
	}
	// As the library's MountProvides: relation-changed only.
	r.HandleRelation(mountinfo.EndpointName, juju.RelationChanged, lc.Handler(c.reconcile))
	return r
}

// blocked is a condition shown as the unit's status rather than failing the hook.
type blocked struct {
	code juju.StatusCode
	msg  string
}

func (b *blocked) Error() string { return b.msg }

// reconcile mounts what is asked (unmounting a different earlier mount first) and reports
// the mount to the principal. What keeps it from mounting is reported as not mounted, with
// any earlier mount left in place, as the real charm does.
func (c *client) reconcile(ctx context.Context, h *charm.Hook[state]) error {
	want, err := c.desired(ctx, h)
	var b *blocked
	if errors.As(err, &b) {
		if err := (mountinfo.Provider{HookContext: h.HookContext}).SetMounted(ctx, false); err != nil {
			return err
		}
		return h.SetUnitStatus(ctx, b.code, b.msg)
	}
	if err != nil {
		return err
	}
	argv := want.command()
	if h.State.Mountpoint != "" && (h.State.Mountpoint != want.mountpoint || !slices.Equal(h.State.Command, argv)) {
		if err := c.stop(ctx, h); err != nil {
			return err
		}
	}
	mounted, err := isMounted(c.mountTable, want.mountpoint)
	if err != nil {
		return err
	}
	if !mounted || !slices.Equal(h.State.Command, argv) {
		_ = h.SetUnitStatus(ctx, juju.StatusMaintenance, "Mounting filesystem")
		if err := os.MkdirAll(want.mountpoint, 0o755); err != nil {
			return fmt.Errorf("cannot create mountpoint: %w", err)
		}
		spec := service.Spec{Name: serviceName, Summary: "sshfs mount of " + want.endpoint.String(), Command: argv}
		if err := c.services.Configure(ctx, spec); err != nil {
			return err
		}
		if err := c.services.Enable(ctx, serviceName); err != nil {
			return err
		}
		if err := c.services.Restart(ctx, serviceName); err != nil {
			return fmt.Errorf("cannot start sshfs: %w", err)
		}
		h.State.Command, h.State.Mountpoint = argv, want.mountpoint
		wctx, cancel := context.WithTimeout(ctx, mountWait)
		err := poll.Until(wctx, 100*time.Millisecond, func(context.Context) (bool, error) {
			return isMounted(c.mountTable, want.mountpoint)
		})
		cancel()
		if err != nil {
			return fmt.Errorf("cannot mount %s at %s within %v: %w", want.endpoint, want.mountpoint, mountWait, err)
		}
	}
	if err := (mountinfo.Provider{HookContext: h.HookContext}).SetMounted(ctx, true); err != nil {
		return err
	}
	return h.SetUnitStatus(ctx, juju.StatusActive, fmt.Sprintf("Mounted filesystem at `%s`", want.mountpoint))
}

// mount is what to mount and how.
type mount struct {
	endpoint   Endpoint
	mountpoint string
	info       mountinfo.Info
}

// command is the sshfs command line: in the foreground (the supervisor's process), straight to
// the sftp-server's port, without sshfs's caches (a file another client replaced must never
// read stale), others allowed in (slurmctld runs as SlurmUser).
func (m mount) command() []string {
	opts := fmt.Sprintf("directport=%d,allow_other,dir_cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0,reconnect", m.endpoint.Port)
	for _, o := range []struct {
		on   bool
		name string
	}{{m.info.NoExec, "noexec"}, {m.info.NoSUID, "nosuid"}, {m.info.NoDev, "nodev"}, {m.info.ReadOnly, "ro"}} {
		if o.on {
			opts += "," + o.name
		}
	}
	return []string{"/usr/bin/sshfs", "-f", "-o", opts, m.endpoint.Host + ":" + m.endpoint.Path, m.mountpoint}
}

// desired reads what to mount from the configuration and the mount relation; what stops it
// is a *blocked.
func (c *client) desired(ctx context.Context, h *charm.Hook[state]) (mount, error) {
	var conf cfg
	if err := h.Config.Decode(ctx, &conf); err != nil {
		return mount{}, err
	}
	ids, err := h.Relations.IDs(ctx, mountinfo.EndpointName)
	if err != nil {
		return mount{}, err
	}
	var info mountinfo.Info
	switch {
	case len(ids) > 1:
		return mount{}, &blocked{juju.StatusBlocked, "Cannot mount using more than one relation at the same time"}
	case len(ids) == 1 && conf.Mountpoint != "":
		return mount{}, &blocked{juju.StatusBlocked, "Cannot mount using both the `mountpoint` config and the `mount` integration"}
	case len(ids) == 1:
		info, err = mountinfo.Provider{HookContext: h.HookContext}.Info(ctx, ids[0])
		if errors.Is(err, mountinfo.ErrNotReady) {
			return mount{}, &blocked{juju.StatusWaiting, "Waiting for mountpoint from `mount` integration"}
		}
		var de *mountinfo.DataError
		if errors.As(err, &de) {
			return mount{}, &blocked{juju.StatusBlocked, de.Error()}
		}
		if err != nil {
			return mount{}, err
		}
	case conf.Mountpoint == "":
		return mount{}, &blocked{juju.StatusBlocked, "Missing `mountpoint` config or `mount` integration"}
	default:
		if err := mountinfo.CheckMountpoint(conf.Mountpoint); err != nil {
			return mount{}, &blocked{juju.StatusBlocked, "invalid mountpoint option: " + err.Error()}
		}
		info = mountinfo.Info{Mountpoint: conf.Mountpoint, NoExec: conf.NoExec, NoSUID: conf.NoSUID, NoDev: conf.NoDev, ReadOnly: conf.ReadOnly}
	}
	if conf.Endpoint == "" {
		return mount{}, &blocked{juju.StatusBlocked, "Missing `endpoint` config (sftp://HOST:PORT/PATH)"}
	}
	ep, err := ParseEndpoint(conf.Endpoint)
	if err != nil {
		return mount{}, &blocked{juju.StatusBlocked, "invalid endpoint option: " + err.Error()}
	}
	return mount{endpoint: ep, mountpoint: info.Mountpoint, info: info}, nil
}

// stop stops the sshfs service of an earlier mount that a different one replaces and makes
// sure it is not mounted any more.
func (c *client) stop(ctx context.Context, h *charm.Hook[state]) error {
	mp := h.State.Mountpoint
	if mp == "" {
		return nil
	}
	if err := c.services.Stop(ctx, serviceName); err != nil && !errors.Is(err, service.ErrUnknownService) {
		return fmt.Errorf("cannot stop sshfs: %w", err)
	}
	if mounted, err := isMounted(c.mountTable, mp); err != nil {
		return err
	} else if mounted {
		if out, err := c.run.Run(ctx, []string{"fusermount3", "-u", "-z", mp}, nil); err != nil || out.ExitCode != 0 {
			return fmt.Errorf("cannot unmount %s: %v %s", mp, err, out.Stderr)
		}
	}
	h.State.Command, h.State.Mountpoint = nil, ""
	return nil
}
