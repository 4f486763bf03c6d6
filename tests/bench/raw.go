package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// ControllerConf is the slurm.conf path on a controller host.
const ControllerConf = "/etc/slurm/slurm.conf"

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
SlurmdLogFile=/var/log/slurm/slurmd.log
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
MaxNodeCount=256
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

// RawJoin measures Slurm's own limit: a controller host runs munged and slurmctld under
// Pebble; then, one after the other, a prepared compute host (munge key written, munged
// running) starts `slurmd -D -Z` through its Pebble and the time until `scontrol show node`
// says IDLE is taken, from the start request, polling every opts.Poll.
func RawJoin(ctx context.Context, opts RawOptions) (RawResult, error) {
	if opts.Network == nil {
		return RawResult{}, errors.New("cannot measure raw join: no network")
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
		return RawResult{}, err
	}
	ctl, err := StartController(ctx, opts.Network, "rawctl", key)
	if err != nil {
		return RawResult{}, err
	}
	sc := &slurm.Client{Runner: slurm.ExecRunner{Command: ctl.Command}, Conf: ControllerConf}
	var res RawResult
	for i := 1; i <= opts.Nodes; i++ {
		name := fmt.Sprintf("raw%d", i)
		t0 := time.Now()
		h, err := opts.Network.AddHost(ctx, hosts.HostOptions{Name: name})
		if err != nil {
			return res, err
		}
		if err := hosts.StartMunge(ctx, h, key); err != nil {
			return res, err
		}
		res.HostCreate = append(res.HostCreate, time.Since(t0))
		svc, err := pebble.New(h.PebbleSocket())
		if err != nil {
			return res, err
		}
		spec := service.Spec{
			Name:    "slurmd",
			Summary: "Slurm compute daemon (dynamic node)",
			Command: []string{"slurmd", "-D", "-Z", "--conf", opts.Conf, "-N", name,
				"--conf-server", netip.AddrPortFrom(ctl.Addr, 6817).String()},
		}
		if err := svc.Configure(ctx, spec); err != nil {
			return res, err
		}
		d, err := TimeToIdle(ctx, sc, name, opts.Poll, func(ctx context.Context) error { return svc.Start(ctx, "slurmd") })
		if err != nil {
			return res, fmt.Errorf("cannot measure raw join of %s: %w", name, err)
		}
		res.Join = append(res.Join, d)
	}
	return res, nil
}

// TimeToIdle calls start in the background and returns the time from the call until node is
// IDLE according to sc, polling every poll. An error of start is returned only if the node
// never became IDLE.
func TimeToIdle(ctx context.Context, sc *slurm.Client, node string, poll time.Duration, start func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startErr := make(chan error, 1)
	t0 := time.Now()
	go func() { startErr <- start(ctx) }()
	var last string
	var lastStartErr error
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
	sc := &slurm.Client{Runner: slurm.ExecRunner{Command: ctl.Command}, Conf: ControllerConf}
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
