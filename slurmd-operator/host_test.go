package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// host is the compute host the charm runs on, with the cluster as its commands see it:
// Slurm's answers come from slurmtest.Cluster, the stateful fake built on outputs recorded
// from real Slurm 22.05; what depends on this host is played here: apt-get, `munge -n`
// (munged answers only while it runs), `slurmd -C` when the machine changed, a client run
// before slurmd cached slurm.conf, and slurmd itself (started through the services fake,
// it registers its node with its --conf, or exits). Every command the charm runs is
// recorded.
type host struct {
	*slurmtest.Cluster
	root string
	mu   sync.Mutex
	// calls are the commands run, argv joined by spaces.
	calls []string
	// failApt makes apt-get exit 100; machine, when set, is what `slurmd -C` prints;
	// mungeUp reports whether munged answers (nil: it does not).
	failApt bool
	machine string
	mungeUp func() bool
	// mungeMute keeps a started munged from listening on its socket (munged's socket is
	// otherwise a real one below root while munged runs: mungeSock).
	mungeMute bool
	mungeSock net.Listener
	// version, when set, is the Slurm release `slurmd -V` prints ("26.05.5"; the recorded
	// 22.05.8 otherwise).
	version string
	// tmpDisk is the disk space slurmd finds (MB): a --conf with a larger TmpDisk registers
	// INVALID_REG, drained with reason "Low TmpDisk", as on real Slurm.
	tmpDisk int
	// exitOn makes slurmd exit at start (its fatal message) when its --conf has this key;
	// exitAfterOn makes it start, then exit before it registers.
	exitOn, exitAfterOn string
	// noCache: slurmd cannot fetch the configuration (no controller), so writes no cache;
	// unreachable: the controller does not answer (SetUnreachable).
	noCache, unreachable bool
	// confs are the --conf each node's record was registered with.
	confs map[string]string
	// endAfter[node] counts down the squeue polls of node until its jobs end.
	endAfter map[string]int
	// deletesWhileBusy counts deletes Slurm refused because jobs ran.
	deletesWhileBusy int
	// registerAfter, when set, is how long a started slurmd loads before it registers its
	// node and logs its start ("slurmd started on ...": real slurmd logs it right before it
	// registers); it has fetched the configuration at once. starting counts the starts
	// still loading, and earlyShows the `scontrol show node` runs made meanwhile.
	registerAfter time.Duration
	quietStart    bool // a slurmd that registers after registerAfter logs nothing
	// lineAhead, when set, is how long before its registration slurmd logs its start (as
	// real slurmd: the line, then the registration RPC and slurmctld's new record).
	lineAhead  time.Duration
	starting   int
	earlyShows int
}

func newHost(root string) *host {
	c := slurmtest.NewCluster()
	c.RequireConf(filepath.Join(root, SpoolConf))
	return &host{Cluster: c, root: root, confs: map[string]string{}, endAfter: map[string]int{}}
}

// services is the host's service manager: starting slurmd registers its node and writes
// the configless cache, as real slurmd does; stopping it leaves the node record alone.
func (h *host) services() *servicetest.Manager {
	m := servicetest.New()
	m.OnStart(func(spec service.Spec) (bool, error) {
		switch spec.Name {
		case SlurmdService:
			return h.slurmdStarted(spec.Command)
		case "munged":
			return true, h.mungedListens(true)
		}
		return true, nil
	})
	m.OnStop(func(spec service.Spec) {
		if spec.Name == "munged" {
			h.mungedListens(false)
		}
	})
	return m
}

// mungedListens opens (on) or closes munged's socket below root: munged listens while it
// runs, unless mungeMute.
func (h *host) mungedListens(on bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mungeSock != nil {
		h.mungeSock.Close()
		h.mungeSock = nil
	}
	if !on || h.mungeMute {
		return nil
	}
	path := filepath.Join(h.root, munge.Socket)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	h.mungeSock = l
	return nil
}

// slurmdStarted is slurmd starting with argv: it reports whether slurmd keeps running.
func (h *host) slurmdStarted(argv []string) (bool, error) {
	var name, conf string
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "-N":
			name = argv[i+1]
		case "--conf":
			conf = argv[i+1]
		}
	}
	p, err := slurmconf.ParseParams(conf)
	if err != nil {
		return false, fmt.Errorf("slurmd: bad --conf %q: %v", conf, err)
	}
	h.mu.Lock()
	exitOn, exitAfterOn, unreachable, noCache, tmpDisk := h.exitOn, h.exitAfterOn, h.unreachable, h.noCache, h.tmpDisk
	h.mu.Unlock()
	switch {
	case p.Has("Port"):
		return false, fmt.Errorf("slurmd: Port is not allowed in --conf")
	case exitOn != "" && p.Has(exitOn):
		return false, fmt.Errorf("slurmd: fatal: bad %s", exitOn)
	case exitAfterOn != "" && p.Has(exitAfterOn):
		return false, nil
	case unreachable:
		return true, nil // slurmd runs but cannot register
	}
	h.mu.Lock()
	after := h.registerAfter
	h.mu.Unlock()
	if after == 0 {
		if err := h.registered(name, conf, p, tmpDisk); err != nil {
			return false, err
		}
		return true, h.cache(noCache)
	}
	if err := h.cache(noCache); err != nil {
		return false, err
	}
	h.mu.Lock()
	h.starting++
	h.mu.Unlock()
	go func() {
		h.mu.Lock()
		quiet, ahead := h.quietStart, h.lineAhead
		h.mu.Unlock()
		const line = "slurmd started on Fri, 27 Nov 2026 02:25:26 +0000"
		var err error
		if ahead > 0 && !quiet {
			time.Sleep(max(after-ahead, 0))
			err = h.logLine(line)
			time.Sleep(ahead)
			err = errors.Join(err, h.registered(name, conf, p, tmpDisk))
		} else {
			time.Sleep(after)
			err = h.registered(name, conf, p, tmpDisk)
			if err == nil && !quiet {
				err = h.logLine(line)
			}
		}
		if err != nil {
			panic(fmt.Sprintf("slurmd %s: %v", name, err))
		}
		h.mu.Lock()
		h.starting--
		h.mu.Unlock()
	}()
	return true, nil
}

// cache writes the configless cache of slurm.conf, unless noCache (slurmd could not fetch
// it).
func (h *host) cache(noCache bool) error {
	if noCache {
		return nil
	}
	path := filepath.Join(h.root, SpoolConf)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("ClusterName=test\n"), 0o644)
}

// registered registers node name as slurmd with --conf conf (parsed: p) does, on a host with
// tmpDisk MB of disk.
func (h *host) registered(name, conf string, p slurmconf.Params, tmpDisk int) error {
	if !h.hasNode(name) {
		h.mu.Lock()
		h.confs[name] = conf
		h.mu.Unlock()
	}
	if err := h.Register(name, conf); err != nil {
		return err
	}
	if v, ok := p.Get("TmpDisk"); ok {
		if t, _ := strconv.Atoi(v); t > tmpDisk {
			h.Invalidate(name, "Low TmpDisk")
		}
	}
	return nil
}

// logLine appends line to slurmd's log, as slurmd writes it.
func (h *host) logLine(line string) error {
	path := filepath.Join(h.root, SlurmdLog)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "[2026-11-27T02:25:26.826] %s\n", line)
	return errors.Join(err, f.Close())
}

// Run implements command.Runner.
func (h *host) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	h.mu.Lock()
	h.calls = append(h.calls, strings.Join(argv, " "))
	failApt, machine, mungeUp, version := h.failApt, h.machine, h.mungeUp, h.version
	if len(argv) > 2 && argv[0] == "scontrol" && argv[1] == "show" && argv[2] == "node" && h.starting > 0 {
		h.earlyShows++
	}
	h.mu.Unlock()
	switch {
	case slices.Equal(argv, []string{"slurmd", "-V"}) && version != "":
		return command.Output{Stdout: []byte("slurm-wlm " + version + "\n")}, nil
	case argv[0] == munge.ClientPath && (mungeUp == nil || !mungeUp()):
		return command.Output{Stderr: []byte("munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file or directory\n"), ExitCode: 1}, nil
	case argv[0] == "apt-get" && failApt:
		return command.Output{Stderr: []byte("E: Unable to locate package slurmd\n"), ExitCode: 100}, nil
	case argv[0] == "apt-get":
		return command.Output{}, nil
	case slices.Equal(argv, []string{"slurmd", "-C"}) && machine != "":
		return command.Output{Stdout: []byte(machine)}, nil
	case argv[0] == "scontrol" || argv[0] == "squeue":
		i := slices.IndexFunc(env, func(s string) bool { return strings.HasPrefix(s, "SLURM_CONF=") })
		if i < 0 {
			return command.Output{}, fmt.Errorf("%s run without SLURM_CONF", argv[0])
		}
		if conf := strings.TrimPrefix(env[i], "SLURM_CONF="); !exists(conf) {
			// Real clients retry for a minute, then fail like this.
			return command.Output{Stderr: []byte(argv[0] + ": error: s_p_parse_file: cannot stat file " + conf + ": No such file or directory, retrying in 1sec up to 60sec\n" +
				argv[0] + ": error: ClusterName needs to be specified\n" + argv[0] + ": fatal: Unable to process configuration file\n"), ExitCode: 1}, nil
		}
	}
	out, err := h.Cluster.Run(ctx, argv, env)
	if err != nil {
		return out, err
	}
	switch {
	case argv[0] == "scontrol" && len(argv) == 3 && argv[1] == "delete" && strings.Contains(string(out.Stderr), "busy"):
		h.mu.Lock()
		h.deletesWhileBusy++
		h.mu.Unlock()
	case argv[0] == "squeue" && len(argv) > 3 && argv[2] == "-w":
		h.polled(argv[3])
	}
	return out, nil
}

// polled counts a poll of node's jobs towards the end of its jobs (endJobsAfter).
func (h *host) polled(node string) {
	h.mu.Lock()
	left, ok := h.endAfter[node]
	if ok && left > 0 {
		h.endAfter[node] = left - 1
	}
	end := ok && left == 1
	h.mu.Unlock()
	if end {
		h.endJobsOn(node)
	}
}

// startJobs starts n jobs on node; they end after polls polls of the node's jobs (squeue),
// or never when polls is negative.
func (h *host) startJobs(node string, n, polls int) {
	for range n {
		h.StartJob(node)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endAfter[node] = polls
}

// endJobsOn ends the jobs running on node.
func (h *host) endJobsOn(node string) {
	out, err := h.Cluster.Run(context.Background(), []string{"squeue", "-h", "-w", node, "-t", "running", "-o", "%i"}, []string{"SLURM_CONF=" + filepath.Join(h.root, SpoolConf)})
	if err != nil {
		panic(fmt.Sprintf("cannot list the jobs of %s: %v", node, err))
	}
	for _, l := range strings.Split(string(out.Stdout), "\n") {
		if id, _, _ := strings.Cut(l, "|"); id != "" {
			h.EndJob(id)
		}
	}
}

// update runs `scontrol update nodename=NODE args...` as an administrator would.
func (h *host) update(node string, args ...string) {
	argv := append([]string{"scontrol", "update", "nodename=" + node}, args...)
	out, err := h.Cluster.Run(context.Background(), argv, []string{"SLURM_CONF=" + filepath.Join(h.root, SpoolConf)})
	if err != nil || out.ExitCode != 0 {
		panic(fmt.Sprintf("%q: %v %s", argv, err, out.Stderr))
	}
}

// SetUnreachable makes the controller unreachable, also for a slurmd that starts.
func (h *host) SetUnreachable(down bool) {
	h.mu.Lock()
	h.unreachable = down
	h.mu.Unlock()
	h.Cluster.SetUnreachable(down)
}

func (h *host) set(f func(h *host)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// callLog are the commands run so far.
func (h *host) callLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

func (h *host) busyDeletes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deletesWhileBusy
}

// conf is the --conf node's record was registered with.
func (h *host) conf(node string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.confs[node]
}

// hasNode reports whether the controller knows node.
func (h *host) hasNode(name string) bool {
	_, ok := h.Node(name)
	return ok
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// errDead is what a call to a dead supervisor returns.
var errDead = errors.New(`cannot get status of service: dial unix /var/lib/pebble/default/.pebble.socket: connect: connection refused`)
