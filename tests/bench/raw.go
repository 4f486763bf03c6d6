package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// ControllerConf is the slurm.conf path on a controller host.
const ControllerConf = "/etc/slurm/slurm.conf"

// RawCgroupConf is the raw controller machine's cgroup.conf, beside ControllerConf, served to
// every configless slurmd from Slurm 24.05 (slurm.Features.CgroupDisabled).
const RawCgroupConf = "/etc/slurm/cgroup.conf"

// SlurmdLogFile is slurmd's log in RawConf and in the slurmctld operator's slurm.conf.
const SlurmdLogFile = "/var/log/slurm/slurmd.log"

// RawConf is the slurm.conf RawJoin's controller runs: the settings the slurmctld operator
// writes (configless, dynamic nodes, no cgroups in namespaces), with @CTL@ and @ADDR@ replaced
// by the controller's name and address.
const RawConf = `ClusterName=bench
SlurmctldHost=@CTL@(@ADDR@)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmctldPidFile=/run/slurmctld.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdSpoolDir=/var/spool/slurmd
SlurmdPidFile=/run/slurmd.pid
SlurmdLogFile=` + SlurmdLogFile + `
SlurmctldDebug=info
SlurmdDebug=info
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MailProg=/bin/true
ReturnToService=2
MaxNodeCount=1024
TreeWidth=65533
SlurmctldParameters=enable_configless
SlurmdTimeout=60
InactiveLimit=0
NodeSet=raw Feature=raw
PartitionName=raw Nodes=raw Default=YES MaxTime=INFINITE State=UP
`

// RawOptions configure RawJoin.
type RawOptions struct {
	// Network holds the hosts RawJoin creates (and removes at the end). Required.
	Network *hosts.Network
	// Nodes is how many nodes join, one after the other; default 5.
	Nodes int
	// Poll is how often the node's state is read; default 20ms.
	Poll time.Duration
	// Conf is the node's --conf; default "RealMemory=1000 CPUs=1 Feature=raw".
	Conf string
}

// RawResult is what RawJoin measured.
type RawResult struct {
	// Join[i] is the time from the start request of node i+1's slurmd until the node was
	// IDLE, with i nodes already in the cluster.
	Join []time.Duration
	// HostCreate[i] is the time to create node i+1's host and start its munged.
	HostCreate []time.Duration
}

// RawCluster is Slurm's own limit, measured step by step: a controller host running munged and
// slurmctld under Pebble, to which prepared compute hosts (munge key written, munged running)
// join by starting `slurmd -D -Z` through their Pebble.
type RawCluster struct {
	opts  RawOptions
	key   []byte
	ctl   *hosts.Host
	sc    *slurm.Client
	nodes int // nodes joined by Join
}

// NewRawCluster starts the controller host of a raw cluster on opts.Network.
func NewRawCluster(ctx context.Context, opts RawOptions) (*RawCluster, error) {
	if opts.Network == nil {
		return nil, errors.New("cannot measure raw join: no network")
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 5
	}
	if opts.Poll <= 0 {
		opts.Poll = 20 * time.Millisecond
	}
	if opts.Conf == "" {
		opts.Conf = "RealMemory=1000 CPUs=1 Feature=raw"
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	ctl, err := StartController(ctx, opts.Network, "rawctl", key)
	if err != nil {
		return nil, err
	}
	return &RawCluster{opts: opts, key: key, ctl: ctl,
		sc: &slurm.Client{Runner: command.Exec{Command: ctl.Command}, Conf: ControllerConf}}, nil
}

// Controller is the raw cluster's controller host.
func (r *RawCluster) Controller() *hosts.Host { return r.ctl }

// prepare creates host name with munged running and slurmd configured (not started) in its
// Pebble, and returns the Pebble client that starts it.
func (r *RawCluster) prepare(ctx context.Context, name string) (*pebble.Manager, error) {
	h, err := r.opts.Network.AddHost(ctx, hosts.HostOptions{Name: name})
	if err != nil {
		return nil, err
	}
	if err := hosts.StartMunge(ctx, h, r.key); err != nil {
		return nil, err
	}
	svc, err := pebble.New(h.PebbleSocket())
	if err != nil {
		return nil, err
	}
	spec := service.Spec{
		Name:    "slurmd",
		Summary: "Slurm compute daemon (dynamic node)",
		Command: []string{"slurmd", "-D", "-Z", "--conf", r.opts.Conf, "-N", name,
			"--conf-server", netip.AddrPortFrom(r.ctl.Addr, 6817).String()},
	}
	if err := svc.Configure(ctx, spec); err != nil {
		return nil, err
	}
	return svc, nil
}

// Join prepares one more compute host (timed as hostCreate) and then starts its slurmd; join is
// the time from the start request until the node is IDLE.
func (r *RawCluster) Join(ctx context.Context) (join, hostCreate time.Duration, err error) {
	r.nodes++
	name := fmt.Sprintf("raw%d", r.nodes)
	t0 := time.Now()
	svc, err := r.prepare(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	hostCreate = time.Since(t0)
	h := r.opts.Network.Host(name)
	logged := SlurmdWrote(func() string { return h.Path(SlurmdLogFile) })
	join, err = TimeToIdle(ctx, r.sc, name, r.opts.Poll, logged, func(ctx context.Context) error { return svc.Start(ctx, "slurmd") })
	if err != nil {
		return 0, hostCreate, fmt.Errorf("cannot measure raw join of %s: %w", name, err)
	}
	return join, hostCreate, nil
}

// RawScale is what RawCluster.Scale measured.
type RawScale struct {
	// Prepare is the time to create the hosts and start their munged (not part of Idle).
	Prepare time.Duration
	// Idle is the time from the start requests of every slurmd until every node was IDLE;
	// IdleAt[i] is when the i-th node (in order of becoming IDLE) was.
	Idle   time.Duration
	IdleAt []time.Duration
	// Remove is the time to remove the hosts and delete the nodes afterwards.
	Remove time.Duration
}

// Scale prepares n compute hosts (concurrently), starts every slurmd at once and times until all
// n nodes are IDLE; then it removes the hosts and deletes the nodes, leaving the cluster as it was.
func (r *RawCluster) Scale(ctx context.Context, n int) (RawScale, error) {
	var res RawScale
	names := make([]string, n)
	svcs := make([]*pebble.Manager, n)
	errs := make([]error, n)
	t0 := time.Now()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		names[i] = fmt.Sprintf("rs%d-%d", n, i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			svcs[i], errs[i] = r.prepare(ctx, names[i])
		}()
	}
	wg.Wait()
	res.Prepare = time.Since(t0)
	defer func() {
		t := time.Now()
		for _, name := range names {
			r.opts.Network.RemoveHost(name)
		}
		r.ctl.RunEnv(context.WithoutCancel(ctx), []string{"SLURM_CONF=" + ControllerConf}, "scontrol", "delete", "nodename="+strings.Join(names, ","))
		res.Remove = time.Since(t)
	}()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	t0 = time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = svcs[i].Spawn(ctx, "slurmd")
		}()
	}
	idle := map[string]time.Duration{}
	err := Poll(ctx, 50*time.Millisecond, func() (bool, string) {
		nodes, err := r.sc.Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if _, seen := idle[nd.Name]; !seen && nd.State.Base == slurm.StateIdle && !nd.State.NotResponding() && strings.HasPrefix(nd.Name, fmt.Sprintf("rs%d-", n)) {
				idle[nd.Name] = time.Since(t0)
				res.IdleAt = append(res.IdleAt, idle[nd.Name])
			}
		}
		return len(idle) == n, fmt.Sprintf("%d/%d idle", len(idle), n)
	})
	res.Idle = time.Since(t0)
	wg.Wait()
	if err != nil {
		return res, fmt.Errorf("raw scale-out of %d: %w (start errors: %v)", n, err, errors.Join(errs...))
	}
	return res, nil
}

// RawJoin measures Slurm's own limit: a controller host runs munged and slurmctld under
// Pebble; then, one after the other, a prepared compute host (munge key written, munged
// running) starts `slurmd -D -Z` through its Pebble and the time until `scontrol show node`
// says IDLE is taken, from the start request, polling every opts.Poll.
func RawJoin(ctx context.Context, opts RawOptions) (RawResult, error) {
	r, err := NewRawCluster(ctx, opts)
	if err != nil {
		return RawResult{}, err
	}
	var res RawResult
	for range r.opts.Nodes {
		join, host, err := r.Join(ctx)
		if err != nil {
			return res, err
		}
		res.Join, res.HostCreate = append(res.Join, join), append(res.HostCreate, host)
	}
	return res, nil
}

// TimeToIdle calls start in the background and returns the time from the call until node is
// IDLE according to sc, polling every poll once logged says slurmd has written its log
// (SlurmdWrote; nil: at once). An error of start is returned only if the node never became
// IDLE.
func TimeToIdle(ctx context.Context, sc *slurm.Client, node string, poll time.Duration, logged func() bool, start func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startErr := make(chan error, 1)
	t0 := time.Now()
	go func() { startErr <- start(ctx) }()
	var last string
	var lastStartErr error
	if err := AwaitLog(ctx, logged); err != nil {
		return 0, fmt.Errorf("node %s not idle: slurmd wrote no log: %w (start: %v)", node, err, startErrOf(startErr))
	}
	for {
		n, err := sc.ShowNode(ctx, node)
		if err == nil && n.State.Base == slurm.StateIdle && !n.State.NotResponding() {
			return time.Since(t0), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = n.State.String()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("node %s not idle: %w (last: %s; start: %v)", node, ctx.Err(), last, lastStartErr)
		case err := <-startErr:
			if err != nil {
				lastStartErr = err
			}
		case <-time.After(poll):
		}
	}
}

// startErrOf is start's error if it has ended, or nil.
func startErrOf(c <-chan error) error {
	select {
	case err := <-c:
		return err
	default:
		return nil
	}
}

// SlurmdWrote returns whether slurmd has written its log, the file at path (SlurmdLogFile,
// seen through its host's root; path returns "" while the host does not exist yet, and is
// asked until it names one): slurmd
// opens it once it has fetched its configuration, before it registers, so no poll before
// that can find its node IDLE. A join's IDLE polls (TimeToIdle, opCluster.joinOne) wait for
// it on both sides, the operators' and Slurm's raw join: each poll is a process and two RPCs
// (5–7 ms of CPU on the two cores the join runs on), and the operators' join, timed from
// its install hook, would pay for polls that Slurm's, timed from slurmd's start, does not.
// Both sides' polls then start at the same point of slurmd's start.
func SlurmdWrote(path func() string) func() bool {
	var p string
	return func() bool {
		if p == "" {
			if p = path(); p == "" {
				return false
			}
		}
		fi, err := os.Stat(p)
		return err == nil && fi.Size() > 0
	}
}

// logCheck is how often AwaitLog checks the log (a stat, no process).
const logCheck = time.Millisecond

// AwaitLog returns once logged holds (nil: at once), or with ctx's error.
func AwaitLog(ctx context.Context, logged func() bool) error {
	if logged == nil {
		return nil
	}
	return Poll(ctx, logCheck, func() (bool, string) { return logged(), "no slurmd log yet" })
}

// StartController adds host name to n with munged (key) and slurmctld running under Pebble on
// RawConf, and waits until `scontrol ping` says UP.
func StartController(ctx context.Context, n *hosts.Network, name string, key []byte) (*hosts.Host, error) {
	ctl, err := n.AddHost(ctx, hosts.HostOptions{Name: name})
	if err != nil {
		return nil, err
	}
	if err := hosts.StartMunge(ctx, ctl, key); err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("@CTL@", name, "@ADDR@", ctl.Addr.String()).Replace(RawConf)
	if err := os.WriteFile(ctl.Path(ControllerConf), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	svc, err := pebble.New(ctl.PebbleSocket())
	if err != nil {
		return nil, err
	}
	if err := svc.Configure(ctx, service.Spec{Name: "slurmctld", Command: []string{"slurmctld", "-D", "-f", ControllerConf}}); err != nil {
		return nil, err
	}
	if err := svc.Start(ctx, "slurmctld"); err != nil {
		log, _ := os.ReadFile(ctl.Path("/var/log/slurm/slurmctld.log"))
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	sc := &slurm.Client{Runner: command.Exec{Command: ctl.Command}, Conf: ControllerConf}
	err = Poll(ctx, 20*time.Millisecond, func() (bool, string) {
		cs, err := sc.Ping(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(cs) > 0 && cs[0].Up, fmt.Sprint(cs)
	})
	if err != nil {
		return nil, fmt.Errorf("slurmctld on %s not up: %w", name, err)
	}
	return ctl, nil
}

// Poll calls cond every interval until it holds or ctx ends; the error names what cond last
// saw.
func Poll(ctx context.Context, interval time.Duration, cond func() (bool, string)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %s)", ctx.Err(), last)
		case <-t.C:
		}
	}
}
