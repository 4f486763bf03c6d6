package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

// FailoverSlurmctldTimeout is the controllers' SlurmctldTimeout in part "failover", as in the
// e2e HA tests (tests/e2e/ha_test.go): the backup takes over once the primary has not
// answered for that long.
const FailoverSlurmctldTimeout = 10 * time.Second

const (
	// failoverShare is the storage host's shared directory, served over sftp to the
	// filesystem-client stand-in's sshfs (the e2e HA tests' storage).
	failoverShare    = "/var/tmp/slurmctld-share"
	failoverSFTPPort = 7022
	// failoverProbeConf is a copy of slurm.conf on the backup's host listing the backup alone
	// as SlurmctldHost: a client with it asks the backup only, and gets "in standby mode" at
	// once from a standby instead of retrying the other controllers.
	failoverProbeConf = "/etc/slurm/bench-backup-only.conf"
	// failoverPoll is how often the controllers are probed.
	failoverPoll = 100 * time.Millisecond
	// failoverJobs is how many one-node jobs are queued behind the 2-node job before a kill.
	failoverJobs = 3
	// failoverRelease is the file (the sample's number appended) whose creation on the slurmd
	// hosts ends the 2-node job: it runs across the kill, the takeover and the restarts that
	// follow, and ends once the sample's controllers have settled. A job that ends while no
	// controller can take its completion (the primary dead, the new primary restarting after
	// its takeover, or for the dead unit's removal) waits for slurmstepd's retry every 15 s
	// (_send_complete_batch_script_msg, src/slurmd/slurmstepd/mgr.c): a `sleep 20` made
	// every sample's jobs end 43-44 s after the kill, 53 s when the removal ran meanwhile.
	failoverRelease = "/var/tmp/bench-failover-release-"
)

// Probe is one probe of the controllers: when it started, when its answer came, and whether
// it got the answer it waited for.
type Probe struct {
	Start, End time.Time
	OK         bool
}

// Unanswered sums the time the probes went without an answer: for each run of unanswered
// probes, from the start of its first probe to the end of the first answered probe after it
// (to the end of the last probe when none was answered after it). It also returns the
// longest such run. Its resolution is the probe interval plus a probe's duration.
func Unanswered(probes []Probe) (total, longest time.Duration) {
	var from time.Time
	end := func(at time.Time) {
		d := at.Sub(from)
		total += d
		longest = max(longest, d)
		from = time.Time{}
	}
	for _, p := range probes {
		switch {
		case !p.OK && from.IsZero():
			from = p.Start
		case p.OK && !from.IsZero():
			end(p.End)
		}
	}
	if !from.IsZero() {
		end(probes[len(probes)-1].End)
	}
	return total, longest
}

// FirstAnswer returns how long after t0 the first answered probe started at or after t0 got
// its answer; false when none did.
func FirstAnswer(probes []Probe, t0 time.Time) (time.Duration, bool) {
	for _, p := range probes {
		if p.OK && !p.Start.Before(t0) {
			return p.End.Sub(t0), true
		}
	}
	return 0, false
}

// ProbeDurations returns how long each probe took.
func ProbeDurations(probes []Probe) []time.Duration {
	out := make([]time.Duration, len(probes))
	for i, p := range probes {
		out[i] = p.End.Sub(p.Start)
	}
	return out
}

// LostJobs returns the jobs of submitted (id → job name) that records (squeue -t all) do not
// show COMPLETED under their own name, sorted: a job the controller no longer knows, one
// whose id now names another job (given again after the job was lost), and one that ended
// otherwise (FAILED, NODE_FAIL, ...) or has not ended yet.
func LostJobs(submitted map[string]string, records []slurm.Job) []string {
	done := map[string]bool{}
	for _, j := range records {
		if name, ok := submitted[j.ID]; ok && j.Name == name && j.State == "COMPLETED" {
			done[j.ID] = true
		}
	}
	var lost []string
	for id := range submitted {
		if !done[id] {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	return lost
}

// OnlyController returns conf (a slurm.conf) with host's SlurmctldHost line alone: the
// configuration of a client that asks that controller only.
func OnlyController(conf []byte, host string) ([]byte, error) {
	d, err := slurmconf.Parse(conf)
	if err != nil {
		return nil, err
	}
	var keep string
	for _, v := range d.GetAll("SlurmctldHost") {
		if name, _, _ := strings.Cut(v, "("); name == host {
			keep = v
		}
	}
	if keep == "" {
		return nil, fmt.Errorf("cannot find controller %s in SlurmctldHost %q", host, d.GetAll("SlurmctldHost"))
	}
	d.Delete("SlurmctldHost")
	if err := d.Add("SlurmctldHost", keep); err != nil {
		return nil, err
	}
	return d.Bytes(), nil
}

// Poller probes every interval in the background until stopped.
type Poller struct {
	mu     sync.Mutex
	probes []Probe
	cancel func()
	done   chan struct{}
}

// StartPoller starts probing with probe (each probe bounded to 5 s) every interval, or right
// after the previous probe when it took longer.
func StartPoller(ctx context.Context, interval time.Duration, probe func(context.Context) bool) *Poller {
	ctx, cancel := context.WithCancel(ctx)
	p := &Poller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			start := time.Now()
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			ok := probe(pctx)
			pcancel()
			if ctx.Err() != nil {
				return // a probe cut off by stop says nothing
			}
			p.mu.Lock()
			p.probes = append(p.probes, Probe{Start: start, End: time.Now(), OK: ok})
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// Answered reports whether a probe was answered.
func (p *Poller) Answered() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.probes, func(pr Probe) bool { return pr.OK })
}

// Stop stops the poller and returns its probes.
func (p *Poller) Stop() []Probe {
	p.cancel()
	<-p.done
	return p.probes
}

// haCluster is part failover's cluster: controllers sharing StateSaveLocation through the
// filesystem-client stand-in (sshfs from a storage host) and two slurmd units.
type haCluster struct {
	*opCluster
	storage *hosts.Host
	// ctls are the controller units in SlurmctldHost order (a unit added is appended).
	ctls []string
	// samples taken so far.
	pings, firstJobs, jobsDone, jobsReleased, unavail, adds, removes, cycles []time.Duration
	// addProbes and killProbes are how long each probe took while a controller was added and
	// after a kill.
	addProbes, killProbes []time.Duration
	lost, resolved        []float64
}

// runFailover is part "failover": on Pebble hosts, a one-controller cluster with the shared
// storage related gets a second controller (add-unit, the seconds without a controller
// answering `scontrol ping` measured), then the primary's host is killed while a 2-node job
// runs and jobs are queued (the backup taking control, the first sbatch accepted), the dead
// unit is removed, and the 2-node job ended (the jobs lost measured); opts.FailoverSamples
// times.
func runFailover(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string) (err error) {
	mp, err := opts.modelParts(ctx, rep, root, scratch)
	if err != nil {
		return err
	}
	tools, ctldCharm, slurmdCharm := mp.tools, mp.ctld, mp.slurmd
	opts.progress("failover: packing the filesystem-client stand-in")
	fsCharm := filepath.Join(scratch, "filesystem-client.charm")
	if err := packCharms(ctx, root, map[string]string{"tests/charms/filesystem-client": fsCharm}); err != nil {
		return err
	}
	n, err := newNetwork(ctx, opts, scratch, "ha")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	storage, err := n.AddHost(ctx, hosts.HostOptions{Name: "storage-0"})
	if err != nil {
		return err
	}
	srv, err := storage.ServeSFTP(ctx, failoverShare, failoverSFTPPort)
	if err != nil {
		return err
	}
	defer srv.Close()
	c, stop, err := startModel(ctx, n, tools, "bench-ha", time.Minute, false, hostMachines(n, tools))
	if err != nil {
		return err
	}
	defer stop(rep, "failover failure (last 60 model lines)", &err)
	f := &haCluster{opCluster: c, storage: storage, ctls: []string{"slurmctld/0"}}
	opts.progress("failover: deploying slurmctld, 2 slurmd and the filesystem-client stand-in, integrating")
	if err := f.deploy(ctx, rep, ctldCharm, slurmdCharm, fsCharm, srv.Endpoint); err != nil {
		return err
	}
	defer f.addFigures(rep)
	for i := range opts.FailoverSamples {
		t0 := time.Now()
		opts.progress("failover: sample %d of %d: add a controller to %s, kill the primary's host", i+1, opts.FailoverSamples, f.ctls[0])
		if err := f.addController(ctx); err != nil {
			return fmt.Errorf("sample %d: %w", i+1, err)
		}
		jobsDone, err := f.killPrimary(ctx, i)
		if err != nil {
			return fmt.Errorf("sample %d: %w", i+1, err)
		}
		// The dead unit's removal (in every sample: a one-controller cluster for the next,
		// and the same controllers' restarts before the jobs end in each) settles them.
		if err := f.removeDead(ctx); err != nil {
			return fmt.Errorf("sample %d: %w", i+1, err)
		}
		if err := jobsDone(ctx); err != nil {
			return fmt.Errorf("sample %d: %w", i+1, err)
		}
		f.cycles = append(f.cycles, time.Since(t0))
	}
	return nil
}

// deploy deploys slurmctld (SlurmctldTimeout FailoverSlurmctldTimeout), two slurmd units and
// the filesystem-client stand-in mounting endpoint, integrates them, and waits until all are
// active, the controller's state is on the share and both nodes are IDLE.
func (f *haCluster) deploy(ctx context.Context, rep *Report, ctldCharm, slurmdCharm, fsCharm, endpoint string) error {
	t0 := time.Now()
	for _, app := range []model.DeployOptions{
		{Charm: ctldCharm, Name: "slurmctld", Config: map[string]string{"slurm-conf-parameters": fmt.Sprintf("SlurmctldTimeout=%d", int(FailoverSlurmctldTimeout.Seconds()))}},
		{Charm: slurmdCharm, Name: "slurmd", Units: 2},
		{Charm: fsCharm, Name: "filesystem-client", Config: map[string]string{"endpoint": endpoint}},
	} {
		if _, err := f.m.Deploy(ctx, app); err != nil {
			return err
		}
	}
	for _, pair := range [][2]string{{"slurmctld", "slurmd"}, {"slurmctld", "filesystem-client"}} {
		if _, err := f.m.Integrate(ctx, pair[0], pair[1]); err != nil {
			return err
		}
	}
	if err := f.wait(ctx, 5*time.Minute, model.AllActive); err != nil {
		return fmt.Errorf("cluster not active: %w", err)
	}
	h, err := f.host("slurmctld/0")
	if err != nil {
		return err
	}
	f.ctl, f.sc = h, f.client(h, ControllerConf)
	if _, err := os.Stat(f.storage.Path(failoverShare + "/checkpoint/job_state")); err != nil {
		return fmt.Errorf("the controller's state is not on the share: %w", err)
	}
	for _, u := range []string{"slurmd/0", "slurmd/1"} {
		if err := f.waitIdle(withTimeout(ctx, 2*time.Minute), slurmd.NodeName(u)); err != nil {
			return fmt.Errorf("%s never idle: %w", u, err)
		}
	}
	rep.Add(Figure{Name: "failover.deploy_s", Value: time.Since(t0).Seconds(), Unit: "s",
		Note: "deploy slurmctld, 2 slurmd and the filesystem-client stand-in (sshfs from a storage host), integrate → all active, state on the share, nodes IDLE (hosts included)"})
	return nil
}

// client is a Slurm client on h with the configuration conf.
func (f *haCluster) client(h *hosts.Host, conf string) *slurm.Client {
	return &slurm.Client{Runner: command.Exec{Command: h.Command}, Conf: conf}
}

// addController adds a controller unit and measures, polling `scontrol ping` on the primary's
// host, the time no controller answered, until both controllers answer, both slurmd units run
// with both as --conf-server (primary first) and no hook runs.
func (f *haCluster) addController(ctx context.Context) error {
	ph, err := f.host(f.ctls[0])
	if err != nil {
		return err
	}
	sc := f.client(ph, ControllerConf)
	p := StartPoller(ctx, failoverPoll, func(ctx context.Context) bool {
		_, err := sc.Ping(ctx)
		return err == nil
	})
	t0 := time.Now()
	units, err := f.m.AddUnit(ctx, "slurmctld", 1)
	if err != nil {
		p.Stop()
		return err
	}
	f.ctls = append(f.ctls, units[0])
	err = f.waitControllers(ctx, 3*time.Minute)
	settled := time.Since(t0)
	probes := p.Stop()
	if err != nil {
		return fmt.Errorf("%s added: %w", units[0], err)
	}
	total, _ := Unanswered(probes)
	f.unavail, f.adds = append(f.unavail, total), append(f.adds, settled)
	f.addProbes = append(f.addProbes, ProbeDurations(probes)...)
	return nil
}

var confServerRE = regexp.MustCompile(`--conf-server (\S+)`)

// waitControllers waits (up to d) until `scontrol ping` on the primary's host lists f.ctls, all
// UP, the slurmd units run with them all as --conf-server in that order, and no hook runs.
func (f *haCluster) waitControllers(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ph, err := f.host(f.ctls[0])
	if err != nil {
		return err
	}
	sc := f.client(ph, ControllerConf)
	settled := func() (bool, string) {
		var want []string
		for _, u := range f.ctls {
			h, err := f.host(u) // a unit added has no host until the model made it
			if err != nil {
				return false, err.Error()
			}
			want = append(want, h.Addr.String()+":6817")
		}
		ctls, err := sc.Ping(ctx)
		if err != nil {
			return false, err.Error()
		}
		up := 0
		for _, c := range ctls {
			if c.Up {
				up++
			}
		}
		if len(ctls) != len(f.ctls) || up != len(ctls) {
			return false, fmt.Sprintf("scontrol ping: %v", ctls)
		}
		for _, u := range []string{"slurmd/0", "slurmd/1"} {
			h, err := f.host(u)
			if err != nil {
				return false, err.Error()
			}
			out, _ := h.Run(ctx, "pgrep", "-a", "-x", "slurmd")
			m := confServerRE.FindStringSubmatch(string(out))
			if m == nil || m[1] != strings.Join(want, ",") {
				return false, fmt.Sprintf("%s: slurmd %s", u, strings.TrimSpace(string(out)))
			}
		}
		return true, ""
	}
	if err := Poll(ctx, 200*time.Millisecond, settled); err != nil {
		return err
	}
	if err := f.m.Wait(ctx, model.WaitOptions{}); err != nil {
		return err
	}
	return Poll(ctx, 200*time.Millisecond, settled)
}

// killPrimary runs a 2-node job, queues failoverJobs more, waits for slurmctld's state save,
// then kills the primary's host (Pebble, slurmctld, munged, sshfs) and measures when the
// backup is in control and answers `scontrol ping` and when it accepts the first sbatch.
// jobsDone, called once the sample's controllers have settled, ends the 2-node job
// (failoverRelease) and measures how many of the jobs do not complete, and when all did.
func (f *haCluster) killPrimary(ctx context.Context, sample int) (jobsDone func(context.Context) error, err error) {
	primary, backup := f.ctls[0], f.ctls[1]
	ph, err := f.host(primary)
	if err != nil {
		return nil, err
	}
	bh, err := f.host(backup)
	if err != nil {
		return nil, err
	}
	submitted := map[string]string{}
	sbatch := func(h *hosts.Host, name string, args ...string) (string, error) {
		argv := append([]string{"sbatch", "--parsable", "-J", name, "-p", "slurmd", "-o", "/dev/null"}, args...)
		out, err := h.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, argv...)
		return strings.TrimSpace(string(out)), err
	}
	name := fmt.Sprintf("failover-%d-0", sample)
	release := fmt.Sprintf("%s%d", failoverRelease, sample)
	running, err := sbatch(ph, name, "-N2", "--exclusive", "--wrap", "while [ ! -e "+release+" ]; do sleep 0.1; done")
	if err != nil {
		return nil, fmt.Errorf("cannot submit the 2-node job: %w", err)
	}
	submitted[running] = name
	sc := f.client(ph, ControllerConf)
	if err := Poll(withTimeout(ctx, 30*time.Second), f.poll*5, func() (bool, string) {
		jobs, err := sc.JobsInPartition(ctx, "slurmd")
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(jobs, func(j slurm.Job) bool { return j.ID == running && j.State == "RUNNING" }), fmt.Sprint(jobs)
	}); err != nil {
		return nil, fmt.Errorf("job %s never ran: %w", running, err)
	}
	for k := 1; k <= failoverJobs; k++ {
		name := fmt.Sprintf("failover-%d-%d", sample, k)
		id, err := sbatch(ph, name, "-N1", "--wrap", "sleep 1")
		if err != nil {
			return nil, fmt.Errorf("cannot queue a job: %w", err)
		}
		submitted[id] = name
	}
	// slurmctld batches its state saves (up to 5 s): what it accepted in the last seconds
	// before it dies is not on the share for the backup. The figure counts the jobs saved.
	last := time.Now()
	jobState := f.storage.Path(failoverShare + "/checkpoint/job_state")
	if err := Poll(withTimeout(ctx, 30*time.Second), f.poll*5, func() (bool, string) {
		st, err := os.Stat(jobState)
		if err != nil {
			return false, err.Error()
		}
		return st.ModTime().Unix() > last.Unix(), st.ModTime().String()
	}); err != nil {
		return nil, fmt.Errorf("job_state never saved after the submissions: %w", err)
	}

	conf, err := os.ReadFile(bh.Path(ControllerConf))
	if err != nil {
		return nil, err
	}
	only, err := OnlyController(conf, bh.Name)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(bh.Path(failoverProbeConf), only, 0o644); err != nil {
		return nil, err
	}
	full, alone := f.client(bh, ControllerConf), f.client(bh, failoverProbeConf)

	killed := time.Now()
	if _, err := ph.Kill("pebble", "slurmctld", "munged", "sshfs"); err != nil {
		return nil, err
	}
	// In control: `scontrol ping` says the backup is UP (a standby answers pings too:
	// slurmctld/backup.c) and the backup, asked alone, serves a query instead of refusing it
	// in standby mode.
	p := StartPoller(ctx, failoverPoll, func(ctx context.Context) bool {
		ctls, err := full.Ping(ctx)
		if err != nil || !slices.ContainsFunc(ctls, func(c slurm.Controller) bool { return c.Host == bh.Name && c.Up }) {
			return false
		}
		_, err = alone.JobsInPartition(ctx, "slurmd")
		return err == nil
	})
	// The first job accepted, retried as a user would: the full configuration, so each
	// sbatch against a backup in standby sleeps SlurmctldTimeout/2 before it asks again.
	var accepted time.Duration
	err = Poll(withTimeout(ctx, time.Minute), failoverPoll, func() (bool, string) {
		_, err := sbatch(bh, fmt.Sprintf("failover-%d-late", sample), "--wrap", "true")
		if err != nil {
			return false, err.Error()
		}
		accepted = time.Since(killed)
		return true, ""
	})
	if err == nil {
		err = Poll(withTimeout(ctx, 30*time.Second), failoverPoll, func() (bool, string) { return p.Answered(), "" })
	}
	probes := p.Stop()
	if err != nil {
		return nil, fmt.Errorf("%s never took over: %w", backup, err)
	}
	ping, _ := FirstAnswer(probes, killed)
	f.pings, f.firstJobs = append(f.pings, ping), append(f.firstJobs, accepted)
	f.killProbes = append(f.killProbes, ProbeDurations(probes)...)

	return func(ctx context.Context) error {
		// The 2-node job's batch script runs on either node.
		for _, u := range []string{"slurmd/0", "slurmd/1"} {
			h, err := f.host(u)
			if err != nil {
				return err
			}
			if err := os.WriteFile(h.Path(release), nil, 0o644); err != nil {
				return fmt.Errorf("cannot end job %s: %w", running, err)
			}
		}
		released := time.Now()
		lost := slices.Sorted(maps.Keys(submitted)) // none seen COMPLETED yet
		_ = Poll(withTimeout(ctx, 90*time.Second), 500*time.Millisecond, func() (bool, string) {
			jobs, err := full.PartitionJobRecords(ctx, "slurmd")
			if err != nil {
				return false, err.Error()
			}
			lost = LostJobs(submitted, jobs)
			return len(lost) == 0, fmt.Sprint(jobs)
		})
		f.lost = append(f.lost, float64(len(lost)))
		if len(lost) == 0 {
			f.jobsDone = append(f.jobsDone, time.Since(killed))
			f.jobsReleased = append(f.jobsReleased, time.Since(released))
		}
		return nil
	}, nil
}

// removeDead removes the killed primary's unit and waits until the next controller is the
// only one, answering, with no hook running.
func (f *haCluster) removeDead(ctx context.Context) error {
	dead := f.ctls[0]
	t0 := time.Now()
	if err := f.m.RemoveUnit(ctx, dead); err != nil {
		return err
	}
	f.ctls = f.ctls[1:]
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	resolved := 0
	if err := Poll(wctx, 200*time.Millisecond, func() (bool, string) {
		st := f.m.State()
		if _, ok := st.Units[dead]; !ok {
			return true, ""
		}
		// The dead host's subordinate (filesystem-client) cannot reach its Pebble to unmount:
		// its departing hooks fail, and the administrator resolves them without a retry, as
		// `juju resolve --no-retry` on a unit whose machine is gone.
		for name, u := range st.Units {
			if u.Principal == dead && u.Failed != nil && f.m.Resolve(wctx, name, false) == nil {
				resolved++
			}
		}
		return false, dead + " still in the model"
	}); err != nil {
		return err
	}
	f.resolved = append(f.resolved, float64(resolved))
	if err := f.waitControllers(ctx, 3*time.Minute); err != nil {
		return fmt.Errorf("%s removed: %w", dead, err)
	}
	f.removes = append(f.removes, time.Since(t0))
	return nil
}

// addFigures adds the figures of the samples taken.
func (f *haCluster) addFigures(rep *Report) {
	target := Max((FailoverSlurmctldTimeout + 5*time.Second).Seconds())
	probe := func(ds []time.Duration) string {
		return fmt.Sprintf("a probe took %s ms (median)", FormatValue(Median(Millis(ds))))
	}
	seconds := func(name string, ds []time.Duration, target *float64, note string) {
		if len(ds) == 0 {
			return
		}
		s := Summarize(Seconds(ds))
		rep.Add(Figure{Name: name, Value: s.Median, Unit: "s", Samples: s.N, Values: Seconds(ds), Target: target, Note: note})
	}
	timeout := fmt.Sprintf("SlurmctldTimeout %d s", int(FailoverSlurmctldTimeout.Seconds()))
	seconds("failover.ping_s", f.pings, target, "primary's host killed (Pebble, slurmctld, munged, sshfs SIGKILLed) → `scontrol ping` on the backup's host shows the backup UP and the backup, asked alone, serves squeue (no longer in standby); polled every 100 ms, "+probe(f.killProbes)+"; "+timeout+" (median)")
	seconds("failover.first_job_s", f.firstJobs, target, "primary's host killed → first `sbatch` accepted, retried every 100 ms on the backup's host with the cluster's slurm.conf (a sbatch refused by a standby sleeps SlurmctldTimeout/2, 5 s, in Slurm's client before it asks again) (median)")
	if len(f.lost) > 0 {
		total := 0.0
		for _, l := range f.lost {
			total += l
		}
		rep.Add(Figure{Name: "failover.jobs_lost", Value: total, Unit: "count", Samples: len(f.lost), Values: f.lost, Target: Max(0),
			Note: fmt.Sprintf("jobs submitted before the kill (a 2-node job running, %d one-node jobs queued; after slurmctld's state save) not COMPLETED under their name within 90 s of the 2-node job's end (after the takeover and the restarts that follow), summed over the samples (values: per sample)", failoverJobs)})
	}
	seconds("failover.jobs_done_s", f.jobsDone, nil, "primary's host killed → every job submitted before the kill COMPLETED, the running 2-node job ended by the bench once the sample's controllers settled (the dead unit removed) (polled every 500 ms; samples with a job lost left out) (median)")
	seconds("failover.jobs_after_release_s", f.jobsReleased, nil, "the 2-node job ended by the bench (controllers settled) → it and the 3 queued jobs COMPLETED (median)")
	seconds("failover.add_controller_unavail_s", f.unavail, nil, "add-unit slurmctld to a one-controller cluster with the shared storage related → time no controller answered `scontrol ping` (on the primary's host, every 100 ms, "+probe(f.addProbes)+"; from the first probe unanswered to the next answer, summed; the one controller, alone in control, restarts in place for the new SlurmctldHost list before the new backup can stand by: slurmctld-operator/rolling.go) (median)")
	seconds("failover.add_controller_s", f.adds, nil, "add-unit slurmctld → both controllers UP, both slurmd units with both as --conf-server, no hook running (median)")
	seconds("failover.remove_dead_s", f.removes, nil, "remove-unit of the killed primary → the backup alone in SlurmctldHost, answering, slurmd units with it alone, no hook running; the dead host's filesystem-client hooks that failed (no Pebble to stop sshfs) resolved without retry as they fail (median)")
	seconds("failover.sample_s", f.cycles, nil, "one sample: add a controller, jobs, kill, takeover, remove the dead unit, jobs done (median)")
	if len(f.resolved) > 0 {
		rep.Add(Figure{Name: "failover.remove_dead_resolved", Value: Median(f.resolved), Unit: "count", Samples: len(f.resolved), Values: f.resolved,
			Note: "failed hooks of the dead host's filesystem-client unit resolved with --no-retry per remove-unit (median)"})
	}
}
