package slurm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PendingJob is one pending job (or array task) as squeue lists it: how many nodes it needs,
// where it may run and why it waits. An autoscaler reads the queue's demand from these.
type PendingJob struct {
	ID string // "123", or "123_4" for an array task
	// Partitions are the partitions the job may run in (a job submitted with -p a,b lists
	// both), in squeue's order.
	Partitions []string
	// Nodes is the minimum number of nodes the job needs (squeue's %D while pending).
	Nodes int
	// Reason is why the job waits: Resources, Priority, PartitionConfig, Dependency, ...
	Reason string
}

// pendingFormat is the -o format ParsePending reads: job id, partitions, node count, reason.
const pendingFormat = "%i|%P|%D|%r"

// PendingJobs lists every pending job with `squeue -h -r -t PENDING -o "%i|%P|%D|%r"`, one line
// per array task (-r), so that an array's tasks count one by one.
func (c *Client) PendingJobs(ctx context.Context) ([]PendingJob, error) {
	out, err := c.run(ctx, true, "squeue", "-h", "-r", "-t", "PENDING", "-o", pendingFormat)
	if err != nil {
		return nil, err
	}
	return ParsePending(out)
}

// ParsePending parses `squeue -h -r -t PENDING -o "%i|%P|%D|%r"` output. A node count given as
// a range ("2-4") gives its minimum.
func ParsePending(data []byte) ([]PendingJob, error) {
	var jobs []PendingJob
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		j, err := parsePendingLine(line)
		if err != nil {
			return nil, fmt.Errorf("cannot parse pending squeue line %d %q: %w", i+1, line, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func parsePendingLine(line string) (PendingJob, error) {
	f := strings.Split(line, "|")
	switch {
	case len(f) != 4:
		return PendingJob{}, fmt.Errorf("want 4 fields separated by '|'")
	case f[0] == "" || strings.ContainsAny(f[0], " \t"):
		return PendingJob{}, fmt.Errorf("bad job id %q", f[0])
	case f[1] == "" || strings.ContainsAny(f[1], " \t"):
		return PendingJob{}, fmt.Errorf("bad partition %q", f[1])
	case f[3] == "":
		return PendingJob{}, fmt.Errorf("empty reason")
	}
	min, _, _ := strings.Cut(f[2], "-")
	n, err := strconv.Atoi(min)
	if err != nil || n < 0 {
		return PendingJob{}, fmt.Errorf("bad node count %q", f[2])
	}
	return PendingJob{ID: f[0], Partitions: strings.Split(f[1], ","), Nodes: n, Reason: f[3]}, nil
}

// slurmTimeLayout is how scontrol prints times (in the controller's local time zone).
const slurmTimeLayout = "2006-01-02T15:04:05"

// LastBusy returns the node's LastBusyTime, read in loc (the controller's time zone; nil means
// UTC): when a job last ended on it, or when its slurmd registered if none ran since. ok is
// false when the record has no such time (before Slurm 22.05, or "None").
func (n Node) LastBusy(loc *time.Location) (t time.Time, ok bool, err error) {
	return n.timeOf("LastBusyTime", loc)
}

// Booted returns the node's BootTime, read in loc as LastBusy reads its time: when the
// node's host last booted, as its slurmd reported it. ok is false when the record has none.
func (n Node) Booted(loc *time.Location) (t time.Time, ok bool, err error) {
	return n.timeOf("BootTime", loc)
}

// timeOf reads the time field key of the record in loc (nil: UTC); ok is false when the
// record has no such time ("None", "Unknown", or no field).
func (n Node) timeOf(key string, loc *time.Location) (t time.Time, ok bool, err error) {
	v, found := n.Get(key)
	if !found || nullable(v) == "" || v == "None" || v == "Unknown" {
		return time.Time{}, false, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	t, err = time.ParseInLocation(slurmTimeLayout, v, loc)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("node %s: bad %s=%q", n.Name, key, v)
	}
	return t, true, nil
}

// Reconsider asks slurmctld to evaluate a pending job again, with `scontrol update
// jobid=ID partition=P[,P...]` naming the partitions it already has, so nothing about the job
// changes. Slurm 22.05 leaves a job that waits with reason PartitionConfig (submitted while its
// partition had no node) to the backfill scheduler, up to bf_interval (30 s by default) after
// a node has joined; the update clears the reason and the main scheduler starts the job at once.
func (c *Client) Reconsider(ctx context.Context, job PendingJob) error {
	if err := checkName("job", job.ID); err != nil {
		return err
	}
	if len(job.Partitions) == 0 {
		return fmt.Errorf("cannot reconsider job %s: no partition", job.ID)
	}
	parts := strings.Join(job.Partitions, ",")
	if err := checkName("partition", parts); err != nil {
		return err
	}
	_, err := c.run(ctx, true, "scontrol", "update", "jobid="+job.ID, "partition="+parts)
	return err
}
