package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/tests/model"
)

// AccountingJobs is how many one-node batch jobs each throughput run submits: 50, about
// 22 s a run at 2.0-2.4 jobs/s (100 took 44-56 s a run, twice for one figure: make bench at
// 85cc2b9). The ratio compares two steady queue rates of the same one-node cluster, and 50
// jobs are still over 20 s of each; two make bench runs of 100 (at 0186694 and 85cc2b9, with
// only refactors of slurmdbd between them) gave ratios 1.006 and 0.883: the machine's load
// moves the ratio more than the count does.
const AccountingJobs = 50

// runAccounting is part "accounting": job throughput (one-node sbatch jobs completed per
// second, AccountingJobs of them) on a cluster of slurmctld and one slurmd on Pebble hosts,
// first without accounting, then with slurmdbd on the test MariaDB related; the ratio of the
// two comes from this one run. With accounting on, every job must be in sacct: a run that
// loses one fails.
func runAccounting(ctx context.Context, opts *RunOptions, rep *Report, root, scratch string) (err error) {
	mp, err := opts.modelParts(ctx, rep, root, scratch)
	if err != nil {
		return err
	}
	opts.progress("accounting: packing slurmdbd and the test MariaDB")
	dbdCharm, dbCharm := filepath.Join(scratch, "slurmdbd.charm"), filepath.Join(scratch, "mariadb.charm")
	if err := packCharms(ctx, root, map[string]string{"slurmdbd-operator": dbdCharm, "tests/charms/mariadb": dbCharm}); err != nil {
		return err
	}
	n, err := newNetwork(ctx, opts, scratch, "acct")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	c, stop, err := startModel(ctx, n, mp.tools, "bench-acct", time.Minute, false, hostMachines(n, mp.tools))
	if err != nil {
		return err
	}
	defer stop(rep, "accounting failure (last 60 model lines)", &err)
	if err := c.deploy(ctx, rep, mp.ctld, mp.slurmd, "accounting.", "hosts", 3*time.Minute); err != nil {
		return err
	}

	opts.progress("accounting: %d jobs without accounting", AccountingJobs)
	off, _, err := c.throughput(ctx)
	if err != nil {
		return fmt.Errorf("without accounting: %w", err)
	}
	opts.progress("accounting: relating slurmdbd on MariaDB")
	before, _ := c.ctlEvents()
	t0 := time.Now()
	for _, app := range []struct{ charm, name string }{{dbCharm, "mariadb"}, {dbdCharm, "slurmdbd"}} {
		if _, err := c.m.Deploy(ctx, model.DeployOptions{Charm: app.charm, Name: app.name}); err != nil {
			return err
		}
	}
	for _, pair := range [][2]string{{"slurmdbd", "mariadb"}, {"slurmctld", "slurmdbd"}} {
		if _, err := c.m.Integrate(ctx, pair[0], pair[1]); err != nil {
			return err
		}
	}
	if err := c.wait(ctx, 5*time.Minute, model.AllActive); err != nil {
		return fmt.Errorf("accounting not active: %w", err)
	}
	relate := time.Since(t0)
	after, _ := c.ctlEvents()
	if err := c.waitIdle(withTimeout(ctx, time.Minute), "slurmd-0"); err != nil {
		return err
	}
	opts.progress("accounting: %d jobs with accounting", AccountingJobs)
	on, ids, err := c.throughput(ctx)
	if err != nil {
		return fmt.Errorf("with accounting: %w", err)
	}
	if err := c.checkAccounted(ctx, ids); err != nil {
		return err
	}
	note := fmt.Sprintf("%d one-node sbatch jobs (--wrap true) on 1 slurmd node, first submission → last job out of the queue", AccountingJobs)
	rep.Add(
		Figure{Name: "accounting.throughput_off_jobs_s", Value: off, Unit: "jobs/s", Note: note + ", no accounting"},
		Figure{Name: "accounting.throughput_on_jobs_s", Value: on, Unit: "jobs/s", Note: note + ", slurmdbd on MariaDB (test charm) related"},
		Figure{Name: "accounting.throughput_ratio", Value: on / off, Unit: "ratio", Note: "throughput with accounting / without, from one run"},
		Figure{Name: "accounting.relate_s", Value: relate.Seconds(), Unit: "s", Note: "deploy mariadb and slurmdbd, integrate both → all active (hosts included)"},
		Figure{Name: "accounting.relate_restarts", Value: float64(after.Starts - before.Starts), Unit: "count", Note: "slurmctld starts (slurmctld.log) relating slurmdbd: one restart to load the accounting plugin"},
		Figure{Name: "accounting.relate_reconfigures", Value: float64(after.Reconfigures - before.Reconfigures), Unit: "count", Note: "reconfigures relating slurmdbd"},
	)
	return nil
}

// ctlRun runs a Slurm client command on the controller host.
func (c *opCluster) ctlRun(ctx context.Context, argv ...string) (string, error) {
	out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + ControllerConf}, argv...)
	return string(out), err
}

// throughput submits AccountingJobs one-node batch jobs and returns the jobs completed per
// second, from the first submission until the queue holds none of them, and their ids.
func (c *opCluster) throughput(ctx context.Context) (float64, []string, error) {
	t0 := time.Now()
	ids := make([]string, 0, AccountingJobs)
	for range AccountingJobs {
		out, err := c.ctlRun(ctx, "sbatch", "--parsable", "-p", "slurmd", "-N1", "-o", "/dev/null", "--wrap", "true")
		if err != nil {
			return 0, nil, err
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	err := Poll(wctx, 100*time.Millisecond, func() (bool, string) {
		out, err := c.ctlRun(wctx, "squeue", "-h", "-o", "%i")
		if err != nil {
			return false, err.Error()
		}
		left := len(strings.Fields(out))
		return left == 0, fmt.Sprintf("%d jobs in the queue", left)
	})
	if err != nil {
		return 0, nil, err
	}
	return float64(AccountingJobs) / time.Since(t0).Seconds(), ids, nil
}

// checkAccounted fails unless sacct lists every job of ids COMPLETED (bounded: the records
// may trail the jobs by a moment).
func (c *opCluster) checkAccounted(ctx context.Context, ids []string) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var missing []string
	err := Poll(wctx, time.Second, func() (bool, string) {
		out, err := c.ctlRun(wctx, "sacct", "-a", "-X", "-n", "-P", "-S", "2020-01-01", "-o", "JobID,State")
		if err != nil {
			return false, err.Error()
		}
		done := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if id, state, ok := strings.Cut(strings.TrimSpace(line), "|"); ok && state == "COMPLETED" {
				done[id] = true
			}
		}
		missing = missing[:0]
		for _, id := range ids {
			if !done[id] {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0, fmt.Sprintf("%d jobs not in sacct", len(missing))
	})
	if err != nil {
		return errors.Join(fmt.Errorf("sacct lacks %d of %d jobs", len(missing), len(ids)), err)
	}
	return nil
}
