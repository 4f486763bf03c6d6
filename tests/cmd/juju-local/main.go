// Command juju-local is the local model's CLI: `juju-local bootstrap` starts the model daemon
// in the background, and the other verbs (deploy, integrate, add-unit, remove-unit,
// remove-application, config, run, status, exec, debug-log, wait, resolve, destroy) are sent to
// it over the unix socket $JUJU_LOCAL_DIR/model.sock. `juju-local --help` lists them and
// `juju-local <verb> --help` explains one.
//
// The hook tools are another binary, jujuc (tests/cmd/jujuc), which the model runs from the
// directory juju-local is in (`make` builds both into build/bin), as Juju's jujuc lies beside
// jujud.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

func main() {
	os.Exit(runCLI(os.Args[1:]))
}

func modelDir() string {
	if d := os.Getenv("JUJU_LOCAL_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".local", "share", "juju-local")
}

func runCLI(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		if len(args) > 1 {
			if v, ok := model.FindVerb(args[1]); ok {
				v.Usage(os.Stdout)
				return 0
			}
		}
		model.WriteUsage(os.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb := args[0]
	if verb == "daemon" {
		return daemon(args[1:])
	}
	v, ok := model.FindVerb(verb)
	if !ok {
		fmt.Fprintf(os.Stderr, "ERROR unrecognized command: juju-local %s (see juju-local --help)\n", verb)
		return 2
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if a == "--help" || a == "-h" {
			v.Usage(os.Stdout)
			return 0
		}
	}
	if verb == "bootstrap" {
		return bootstrap(args[1:])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cwd, _ := os.Getwd()
	pid := readPid(modelDir())
	code, err := model.Call(ctx, filepath.Join(modelDir(), "model.sock"), model.Request{Argv: args, Dir: cwd}, os.Stdout, os.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return 130
		}
		if verb == "destroy" && readPid(modelDir()) == 0 {
			// No daemon: its hosts died with it; forget its state so that bootstrap works again.
			removeState(modelDir())
			fmt.Fprintf(os.Stderr, "no model running in %s: removed its state\n", modelDir())
			return 0
		}
		fmt.Fprintf(os.Stderr, "ERROR %v (is the model bootstrapped? run juju-local bootstrap)\n", err)
		return 1
	}
	if verb == "destroy" && code == 0 && pid > 0 {
		// The daemon tears the hosts down and exits: wait for it.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for syscall.Kill(pid, 0) == nil {
			select {
			case <-ctx.Done():
				return 130
			case <-tick.C:
			}
		}
	}
	return code
}

// removeState removes a model's state, keeping daemon.log.
func removeState(dir string) {
	for _, f := range []string{"state.json", "debug.log", "tools", "charms", "machines", "hosts", "agent.sock", "model.sock"} {
		os.RemoveAll(filepath.Join(dir, f))
	}
}

// readPid returns the pid of the model's daemon if it is alive, else 0.
func readPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "daemon.pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n <= 0 || syscall.Kill(n, 0) != nil {
		return 0
	}
	return n
}

func daemonFlags(fs *pflag.FlagSet) {
	v, _ := model.FindVerb("bootstrap")
	v.Flags(fs)
}

// bootstrap starts `juju-local daemon` in the background and waits for its socket.
func bootstrap(args []string) int {
	fs := pflag.NewFlagSet("bootstrap", pflag.ContinueOnError)
	daemonFlags(fs)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 2
	}
	dir := modelDir()
	sock := filepath.Join(dir, "model.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := model.Call(ctx, sock, model.Request{Argv: []string{"status", "--format=json"}}, io.Discard, io.Discard); err == nil {
		fmt.Fprintf(os.Stderr, "ERROR a model is already running in %s (juju-local destroy first)\n", dir)
		return 1
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	logf, err := os.OpenFile(filepath.Join(dir, "daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	defer logf.Close()
	cmd := exec.Command(self, append([]string{"daemon"}, args...)...)
	cmd.Env = append(os.Environ(), "JUJU_LOCAL_DIR="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR cannot start the model daemon: %v\n", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
			fmt.Fprintf(os.Stderr, "ERROR the model daemon exited (%v):\n%s", err, log)
			return 1
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "ERROR the model daemon did not answer in time; see %s\n", filepath.Join(dir, "daemon.log"))
			return 1
		case <-tick.C:
			if _, err := model.Call(ctx, sock, model.Request{Argv: []string{"status", "--format=json"}}, io.Discard, io.Discard); err == nil {
				fmt.Fprintf(os.Stderr, "Bootstrapped model in %s (daemon pid %d, log %s)\n", dir, cmd.Process.Pid, filepath.Join(dir, "daemon.log"))
				return 0
			}
		}
	}
}

// daemon runs the model in the foreground until SIGTERM/SIGINT or the destroy verb.
func daemon(args []string) int {
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	daemonFlags(fs)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 2
	}
	dir := modelDir()
	interval, _ := fs.GetDuration("update-status-interval")
	retry, _ := fs.GetDuration("hook-retry")
	machines, _ := fs.GetString("machines")
	pebble, _ := fs.GetString("pebble")
	name, _ := fs.GetString("model")
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	tools := model.ToolsBeside(self)
	if _, err := os.Stat(tools); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR cannot find the hook tools beside juju-local (build both with make): %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if machines == "auto" {
		machines = "local"
		if os.Geteuid() == 0 {
			if _, err := exec.LookPath("nsenter"); err == nil {
				machines = "hosts"
			}
		}
	}
	var prov model.Provisioner
	switch machines {
	case "local":
		prov = model.LocalMachines{Dir: filepath.Join(dir, "machines")}
	case "hosts":
		if pebble == "" {
			pebble = findPebble()
		}
		if pebble == "" {
			fmt.Fprintln(os.Stderr, "ERROR cannot find a pebble binary: give --pebble or build it with scripts/deps.sh")
			return 1
		}
		os.RemoveAll(filepath.Join(dir, "hosts"))
		n, err := hosts.NewNetwork(ctx, hosts.NetworkOptions{Prefix: "jl", Dir: filepath.Join(dir, "hosts"), PebbleBin: pebble})
		if err != nil {
			fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
			return 1
		}
		base, _ := fs.GetString("base")
		if prov, err = baseMachines(n, dir, self, base); err != nil {
			n.Close()
			fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
			return 1
		}
	default:
		fmt.Fprintf(os.Stderr, "ERROR invalid value %q for option --machines\n", machines)
		return 2
	}
	// With the referee beside juju-local (model.BuildBinaries builds it there; `make tools`
	// does not), Juju 3.6's own code judges every hook tool call and hook: what it finds is
	// logged when the model stops.
	referee := model.RefereeBeside(self)
	if _, err := os.Stat(referee); err != nil {
		referee = ""
	}
	m, err := model.New(ctx, model.Options{
		Dir: dir, Name: name, Tools: tools, Machines: prov,
		UpdateStatusInterval: interval, HookRetry: retry, Referee: referee,
		Log: func(line string) { fmt.Fprintln(os.Stderr, line) },
	})
	if err != nil {
		prov.Close()
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	if err := m.ListenCLI(filepath.Join(dir, "model.sock")); err != nil {
		m.Close()
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	pidFile := filepath.Join(dir, "daemon.pid")
	os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	defer os.Remove(pidFile)
	fmt.Fprintf(os.Stderr, "model %s running in %s with %s machines\n", name, dir, machines)
	if referee != "" {
		fmt.Fprintf(os.Stderr, "judged by Juju 3.6's own code (%s)\n", referee)
	}
	destroyed := false
	select {
	case <-ctx.Done():
	case <-m.DestroyRequested():
		destroyed = true
	}
	err = m.Close()
	if destroyed {
		removeState(dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	return 0
}

// findPebble looks for build/bin/pebble above the working directory and the binary, then PATH.
func findPebble() string {
	if d := findAbove(filepath.Join("build", "bin", "pebble")); d != "" {
		return filepath.Join(d, "build", "bin", "pebble")
	}
	if p, err := exec.LookPath("pebble"); err == nil {
		return p
	}
	return ""
}
