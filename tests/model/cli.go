package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/charmed-slurm/operators/tests/model/wire"
)

// Verb is one CLI command of juju-local.
type Verb struct {
	Name    string
	Args    string
	Summary string
	// Flags declares the verb's flags.
	Flags func(fs *pflag.FlagSet)
	// Local verbs run in the client (no model needed).
	Local bool
	run   func(c *cliCall) error
}

// Verbs lists juju-local's CLI verbs, in help order.
func Verbs() []*Verb { return verbs }

// FindVerb returns the named verb.
func FindVerb(name string) (*Verb, bool) {
	for _, v := range verbs {
		if v.Name == name {
			return v, true
		}
	}
	return nil, false
}

// Usage writes the verb's help.
func (v *Verb) Usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: juju-local %s %s\n\n%s\n", v.Name, v.Args, v.Summary)
	fs := v.flagSet()
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nOptions:\n%s", fs.FlagUsages())
	}
}

func (v *Verb) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet(v.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolP("help", "h", false, "show this help")
	if v.Flags != nil {
		v.Flags(fs)
	}
	return fs
}

// WriteUsage writes juju-local's help.
func WriteUsage(w io.Writer) {
	fmt.Fprint(w, `juju-local plays Juju's part on one machine: it deploys charms onto real hosts (network, UTS
and mount namespaces with Pebble), runs their hooks with Juju's environment and hook tools, and
answers Juju's CLI verbs.

Usage: juju-local <command> [options] [args]

The model lives in $JUJU_LOCAL_DIR (default ~/.local/share/juju-local). Start it with
"juju-local bootstrap", then deploy, integrate and watch:

  juju-local bootstrap
  juju-local deploy ./slurmctld.charm
  juju-local deploy ./slurmd.charm -n 2
  juju-local integrate slurmctld slurmd
  juju-local wait --for active
  juju-local status
  juju-local destroy

Commands:
`)
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-19s %s\n", v.Name, strings.SplitN(v.Summary, "\n", 2)[0])
	}
	fmt.Fprint(w, "\nRun \"juju-local <command> --help\" for a command's options.\n")
}

type cliCall struct {
	ctx    context.Context
	m      *Model
	fs     *pflag.FlagSet
	args   []string
	dir    string
	stdout io.Writer
	stderr io.Writer
	code   int
}

func (c *cliCall) str(name string) string        { v, _ := c.fs.GetString(name); return v }
func (c *cliCall) boolean(name string) bool      { v, _ := c.fs.GetBool(name); return v }
func (c *cliCall) integer(name string) int       { v, _ := c.fs.GetInt(name); return v }
func (c *cliCall) strs(name string) []string     { v, _ := c.fs.GetStringArray(name); return v }
func (c *cliCall) dur(name string) time.Duration { v, _ := c.fs.GetDuration(name); return v }

func (c *cliCall) path(p string) string {
	if filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

func (c *cliCall) want(min, max int) error {
	if len(c.args) < min {
		return &usageError{"missing arguments"}
	}
	if max >= 0 && len(c.args) > max {
		return &usageError{fmt.Sprintf("unrecognized args: %q", c.args[max:])}
	}
	return nil
}

// RunCLI runs one CLI verb (argv[0] is the verb) against the model.
func (m *Model) RunCLI(ctx context.Context, req Request, stdout, stderr io.Writer) int {
	if len(req.Argv) == 0 {
		WriteUsage(stderr)
		return 2
	}
	v, ok := FindVerb(req.Argv[0])
	if !ok || v.Local {
		fmt.Fprintf(stderr, "ERROR unrecognized command: juju-local %s\n", req.Argv[0])
		return 2
	}
	fs := v.flagSet()
	if err := fs.Parse(req.Argv[1:]); err != nil {
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 2
	}
	if help, _ := fs.GetBool("help"); help {
		v.Usage(stdout)
		return 0
	}
	c := &cliCall{ctx: ctx, m: m, fs: fs, args: fs.Args(), dir: req.Dir, stdout: stdout, stderr: stderr}
	if err := v.run(c); err != nil {
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return c.code
}

// ListenCLI serves the CLI verbs on a unix socket at path until the model is closed.
func (m *Model) ListenCLI(path string) error {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("cannot listen for the CLI: %w", err)
	}
	go func() {
		<-m.ctx.Done()
		ln.Close()
		os.Remove(path)
	}()
	var wg = new(syncWaitGroup)
	go wire.Serve(m.ctx, ln, m.RunCLI, &wg.WaitGroup)
	return nil
}

// DestroyRequested is closed when the destroy verb has run: the daemon should Close and exit.
func (m *Model) DestroyRequested() <-chan struct{} { return m.destroyReq }

// parseKV parses key=value arguments (the CLI's config and action parameters, the hook tools'
// settings). A value may be empty: relation-set, leader-set and state-set delete the key then
// (applySettings).
func parseKV(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Sprintf("expected \"key=value\", got %q", a)}
		}
		out[k] = v
	}
	return out, nil
}

// follow copies progress lines to w until ctx ends or done returns true after a change.
func (c *cliCall) withProgress(fn func() error) error {
	lines, stop := c.m.Subscribe()
	defer stop()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	for {
		select {
		case err := <-done:
			for {
				select {
				case l := <-lines:
					if !strings.HasPrefix(l, "unit-") {
						fmt.Fprintln(c.stderr, l)
					}
				default:
					return err
				}
			}
		case l := <-lines:
			if !strings.HasPrefix(l, "unit-") { // debug-log lines are for debug-log
				fmt.Fprintln(c.stderr, l)
			}
		}
	}
}

var verbs = []*Verb{
	{
		Name: "bootstrap", Args: "", Local: true,
		Summary: "Start the model daemon in the background (state in $JUJU_LOCAL_DIR).",
		Flags: func(fs *pflag.FlagSet) {
			fs.Duration("update-status-interval", 5*time.Minute, "period of update-status hooks")
			fs.Duration("hook-retry", 0, "first delay of the automatic retry of failed hooks, doubling up to 5m (0: Juju's 5s; negative: no automatic retry, wait for resolve)")
			fs.String("machines", "auto", "hosts (netns hosts with Pebble; needs root), local (plain processes) or auto")
			fs.String("pebble", "", "pebble binary for hosts (default: build/bin/pebble of the repository, or PATH)")
			fs.String("model", "local", "model name")
			fs.String("base", "", "base of units deployed without --base: debian@12, debian@13 or debian@14 (systemd machines), or empty for Pebble hosts")
		},
	},
	{
		Name: "status", Args: "[--format tabular|json|yaml]",
		Summary: "Show applications, units, machines and their statuses, as juju status does.",
		Flags:   func(fs *pflag.FlagSet) { fs.String("format", "tabular", "tabular, json or yaml") },
		run: func(c *cliCall) error {
			if err := c.want(0, 0); err != nil {
				return err
			}
			st := c.m.Status(c.ctx)
			switch f := c.str("format"); f {
			case "tabular":
				return st.WriteTable(c.stdout)
			case "json", "yaml":
				return writeFormatted(c.stdout, f, st)
			default:
				return &usageError{fmt.Sprintf("invalid value %q for option --format", f)}
			}
		},
	},
	{
		Name: "deploy", Args: "<charm-dir|file.charm> [application] [-n N] [--config key=value ...]",
		Summary: "Deploy a charm: each unit gets a new machine (host).",
		Flags: func(fs *pflag.FlagSet) {
			fs.IntP("num-units", "n", 1, "number of units")
			fs.StringArray("config", nil, "option value, key=value (repeatable)")
			fs.Bool("wait", false, "print progress until the model is idle")
			fs.String("base", "", "machines of this base: debian@12, debian@13 or debian@14 (systemd machines; default: the model's)")
		},
		run: func(c *cliCall) error {
			if err := c.want(1, 2); err != nil {
				return err
			}
			cfg, err := parseKV(c.strs("config"))
			if err != nil {
				return err
			}
			name := ""
			if len(c.args) == 2 {
				name = c.args[1]
			}
			deploy := func() error {
				units, err := c.m.Deploy(c.ctx, DeployOptions{Charm: c.path(c.args[0]), Name: name, Units: c.integer("num-units"), Config: cfg, Base: c.str("base")})
				if err != nil {
					return err
				}
				app, _, _ := strings.Cut(units[0], "/")
				fmt.Fprintf(c.stderr, "Deployed %q from local charm %q with %d unit(s)\n", app, filepath.Base(c.args[0]), len(units))
				if c.boolean("wait") {
					return c.m.Wait(c.ctx, WaitOptions{})
				}
				return nil
			}
			if c.boolean("wait") {
				// Subscribe first, so that no progress line is missed.
				return c.withProgress(deploy)
			}
			return deploy()
		},
	},
	{
		Name: "integrate", Args: "<application>[:<endpoint>] <application>[:<endpoint>]",
		Summary: "Integrate two applications (endpoints matched by interface).",
		run: func(c *cliCall) error {
			if err := c.want(2, 2); err != nil {
				return err
			}
			_, err := c.m.Integrate(c.ctx, c.args[0], c.args[1])
			return err
		},
	},
	{
		Name: "remove-relation", Args: "<application>[:<endpoint>] <application>[:<endpoint>]",
		Summary: "Remove the relation between two applications.",
		run: func(c *cliCall) error {
			if err := c.want(2, 2); err != nil {
				return err
			}
			return c.m.RemoveRelation(c.ctx, c.args[0], c.args[1])
		},
	},
	{
		Name: "add-unit", Args: "<application> [-n N]",
		Summary: "Add units, each on a new machine (host).",
		Flags:   func(fs *pflag.FlagSet) { fs.IntP("num-units", "n", 1, "number of units") },
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			_, err := c.m.AddUnit(c.ctx, c.args[0], c.integer("num-units"))
			return err
		},
	},
	{
		Name: "remove-unit", Args: "<unit> [<unit> ...]",
		Summary: "Remove units: relations depart and break, stop and remove run, the machine is destroyed.",
		run: func(c *cliCall) error {
			if err := c.want(1, -1); err != nil {
				return err
			}
			for _, u := range c.args {
				fmt.Fprintf(c.stderr, "will remove unit %s\n", u)
			}
			return c.m.RemoveUnit(c.ctx, c.args...)
		},
	},
	{
		Name: "reboot", Args: "<machine|unit>",
		Summary: "Reboot a unit's machine (systemd machines): stop runs as it goes down, start then config-changed once it has booted with a new boot id.",
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "rebooting %s\n", c.args[0])
			return c.m.Reboot(c.ctx, c.args[0])
		},
	},
	{
		Name: "remove-application", Args: "<application>",
		Summary: "Remove an application, its relations and all its units.",
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "will remove application %s\n", c.args[0])
			return c.m.RemoveApplication(c.ctx, c.args[0])
		},
	},
	{
		Name: "config", Args: "<application> [key | key=value ...] [--reset key[,key]]",
		Summary: "Show or change an application's config.",
		Flags:   func(fs *pflag.FlagSet) { fs.StringSlice("reset", nil, "keys to reset to their defaults") },
		run: func(c *cliCall) error {
			if err := c.want(1, -1); err != nil {
				return err
			}
			app := c.args[0]
			rest := c.args[1:]
			reset := c.strs0("reset")
			if len(rest) == 0 && len(reset) == 0 {
				return c.showConfig(app)
			}
			if len(rest) == 1 && !strings.Contains(rest[0], "=") && len(reset) == 0 {
				cfg, err := c.m.ConfigValues(app)
				if err != nil {
					return err
				}
				return writeFormatted(c.stdout, "smart", cfg[rest[0]])
			}
			kv, err := parseKV(rest)
			if err != nil {
				return err
			}
			return c.m.SetConfig(c.ctx, app, kv, reset)
		},
	},
	{
		Name: "refresh", Args: "<application> --path <charm>",
		Summary: "Replace an application's charm (juju refresh --path): each unit runs upgrade-charm, then config-changed.",
		Flags:   func(fs *pflag.FlagSet) { fs.String("path", "", "the new charm: a .charm file or a charm directory") },
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			if c.str("path") == "" {
				return &usageError{"--path is required"}
			}
			if err := c.m.Refresh(c.ctx, c.args[0], c.path(c.str("path"))); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "Added local charm %q to the model.\n", c.args[0])
			return nil
		},
	},
	{
		Name: "run", Args: "<unit> <action> [key=value ...]",
		Summary: "Run an action and print its results as YAML; exits 1 when it fails.",
		Flags: func(fs *pflag.FlagSet) {
			fs.Duration("wait", 0, "give up after this long (0: no limit)")
			fs.String("format", "yaml", "yaml or json")
		},
		run: func(c *cliCall) error {
			if err := c.want(2, -1); err != nil {
				return err
			}
			params, err := parseKV(c.args[2:])
			if err != nil {
				return err
			}
			ctx := c.ctx
			if d := c.dur("wait"); d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			var act *ActionRun
			var id string
			// Subscribe before queueing, so that no action-log line is missed.
			err = c.withProgress(func() error {
				var err error
				id, err = c.m.EnqueueAction(ctx, c.args[0], c.args[1], params)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.stderr, "Running operation %s with 1 task\n  - task %s on %s\n\nWaiting for task %s...\n", id, id, unitTag(c.args[0]), id)
				act, err = c.m.WaitAction(ctx, id)
				return err
			})
			if err != nil {
				return err
			}
			out := map[string]any{}
			for k, v := range act.Results {
				out[k] = v
			}
			if len(out) > 0 {
				if err := writeFormatted(c.stdout, c.str("format"), out); err != nil {
					return err
				}
			}
			if act.Status != "completed" {
				fmt.Fprintf(c.stderr, "Action id %s failed: %s\n", id, act.Message)
				c.code = 1
			}
			return nil
		},
	},
	{
		Name: "exec", Args: "<unit> -- <command> [args ...]",
		Summary: "Run a command on a unit's machine (host) and exit with its exit code.",
		Flags:   func(fs *pflag.FlagSet) { fs.String("unit", "", "the unit (juju exec --unit syntax)") },
		run: func(c *cliCall) error {
			args := c.args
			unit := c.str("unit")
			if unit == "" {
				if len(args) == 0 {
					return &usageError{"no unit given"}
				}
				unit, args = args[0], args[1:]
			}
			if len(args) == 0 {
				return &usageError{"no command given"}
			}
			code, err := c.m.Exec(c.ctx, unit, args, c.stdout, c.stderr)
			c.code = code
			return err
		},
	},
	{
		Name: "debug-log", Args: "[--no-tail]",
		Summary: "Print juju-log lines and hook output, following new ones unless --no-tail.",
		Flags:   func(fs *pflag.FlagSet) { fs.Bool("no-tail", false, "stop after printing what has been logged") },
		run: func(c *cliCall) error {
			lines, stop := c.m.Subscribe()
			defer stop()
			for _, l := range c.m.DebugLog() {
				fmt.Fprintln(c.stdout, l)
			}
			if c.boolean("no-tail") {
				return nil
			}
			for {
				select {
				case <-c.ctx.Done():
					return nil
				case l := <-lines:
					if strings.HasPrefix(l, "unit-") {
						fmt.Fprintln(c.stdout, l)
					}
				}
			}
		},
	},
	{
		Name: "wait", Args: "[--for idle|active] [--timeout 5m]",
		Summary: "Wait until every unit is idle with nothing queued (and, with --for active, active), printing progress.",
		Flags: func(fs *pflag.FlagSet) {
			fs.String("for", "idle", "idle, or active (every workload active)")
			fs.Duration("timeout", 5*time.Minute, "give up after this long")
		},
		run: func(c *cliCall) error {
			if err := c.want(0, 0); err != nil {
				return err
			}
			opts := WaitOptions{}
			switch f := c.str("for"); f {
			case "idle":
			case "active":
				opts.Until = AllActive
			default:
				return &usageError{fmt.Sprintf("invalid value %q for option --for", f)}
			}
			ctx, cancel := context.WithTimeout(c.ctx, c.dur("timeout"))
			defer cancel()
			return c.withProgress(func() error { return c.m.Wait(ctx, opts) })
		},
	},
	{
		Name: "resolve", Args: "<unit> [--no-retry]",
		Summary: "Clear a unit's hook error; the failed hook runs again unless --no-retry.",
		Flags:   func(fs *pflag.FlagSet) { fs.Bool("no-retry", false, "skip the failed hook") },
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			return c.m.Resolve(c.ctx, c.args[0], !c.boolean("no-retry"))
		},
	},
	{
		Name: "actions", Args: "<application>",
		Summary: "List an application's actions.",
		run: func(c *cliCall) error {
			if err := c.want(1, 1); err != nil {
				return err
			}
			st := c.m.State()
			a, ok := st.Applications[c.args[0]]
			if !ok {
				return fmt.Errorf("application %q not found", c.args[0])
			}
			fmt.Fprintf(c.stdout, "Action\tDescription\n")
			for _, name := range sortedKeys(a.Charm.Actions) {
				fmt.Fprintf(c.stdout, "%s\t%s\n", name, strings.TrimSpace(strings.SplitN(a.Charm.Actions[name].Description, "\n", 2)[0]))
			}
			return nil
		},
	},
	{
		Name: "destroy", Args: "[--timeout 5m] [--force]",
		Summary: "Remove every application (running their stop and remove hooks), destroy every host and stop the daemon.",
		Flags: func(fs *pflag.FlagSet) {
			fs.Duration("timeout", 5*time.Minute, "how long to wait for the applications to go")
			fs.Bool("force", false, "destroy the hosts without running any hook")
		},
		run: func(c *cliCall) error {
			if !c.boolean("force") {
				st := c.m.State()
				for _, app := range sortedKeys(st.Applications) {
					if err := c.m.RemoveApplication(c.ctx, app); err != nil {
						return err
					}
				}
				ctx, cancel := context.WithTimeout(c.ctx, c.dur("timeout"))
				defer cancel()
				err := c.withProgress(func() error { return c.m.Wait(ctx, WaitOptions{AllowErrors: true}) })
				if err != nil {
					fmt.Fprintf(c.stderr, "applications did not go in time (%v): destroying their machines\n", err)
				}
			}
			c.m.requestDestroy()
			fmt.Fprintln(c.stderr, "model destroyed")
			return nil
		},
	},
}

func (c *cliCall) strs0(name string) []string { v, _ := c.fs.GetStringSlice(name); return v }

func (c *cliCall) showConfig(app string) error {
	st := c.m.State()
	a, ok := st.Applications[app]
	if !ok {
		return fmt.Errorf("application %q not found", app)
	}
	settings := map[string]any{}
	for name, o := range a.Charm.Options {
		s := map[string]any{"type": o.Type, "description": o.Description, "source": "unset"}
		if o.Default != nil {
			s["default"] = o.Default
			s["value"] = o.Default
			s["source"] = "default"
		}
		if v, ok := a.Config[name]; ok {
			s["value"] = v
			s["source"] = "user"
		}
		settings[name] = s
	}
	out := map[string]any{"application": app, "charm": a.Charm.Name, "settings": settings}
	b, err := yaml.Marshal(out)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(b)
	return err
}
