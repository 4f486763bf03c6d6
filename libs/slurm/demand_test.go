package slurm_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

func TestPendingJobs(t *testing.T) {
	t.Parallel()
	burst := []slurm.PendingJob{{ID: "1", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "None"}}
	for id := 2; id <= 12; id++ {
		burst = append(burst, slurm.PendingJob{ID: strconv.Itoa(id), Partitions: []string{"slurmd"}, Nodes: 1, Reason: "Priority"})
	}
	tests := []struct {
		name string
		real string
		want []slurm.PendingJob
	}{
		{"burst of 12 one-node jobs", "squeue-pending", burst},
		{"24.11, partition with only FUTURE nodes", "squeue-pending-future-24.11", []slurm.PendingJob{
			{ID: "2", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "ReqNodeNotAvail, May be reserved for other job"},
		}},
		{"partition with no node (scale from zero)", "squeue-pending-no-nodes", []slurm.PendingJob{
			{ID: "1", Partitions: []string{"slurmd"}, Nodes: 1, Reason: "PartitionConfig"},
			{ID: "2", Partitions: []string{"slurmd"}, Nodes: 2, Reason: "PartitionConfig"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newClient(slurmtest.Real(tt.real))
			got, err := c.PendingJobs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("PendingJobs() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestPendingJobsUnreachable(t *testing.T) {
	t.Parallel()
	unreachable := slurmtest.Real("squeue-unreachable")
	unreachable.Argv = slurmtest.Real("squeue-pending").Argv
	c, _ := newClient(unreachable)
	if _, err := c.PendingJobs(context.Background()); !errors.Is(err, slurm.ErrControllerUnreachable) {
		t.Fatalf("PendingJobs() error = %v, want ErrControllerUnreachable", err)
	}
}

func TestParsePending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []slurm.PendingJob
		err      bool
	}{
		{name: "empty", in: ""},
		{name: "several partitions, node range, array task", in: "7_3|a,b|2-4|Resources\n",
			want: []slurm.PendingJob{{ID: "7_3", Partitions: []string{"a", "b"}, Nodes: 2, Reason: "Resources"}}},
		{name: "reason with spaces and commas", in: "8|p|1|ReqNodeNotAvail, UnavailableNodes:n1\n",
			want: []slurm.PendingJob{{ID: "8", Partitions: []string{"p"}, Nodes: 1, Reason: "ReqNodeNotAvail, UnavailableNodes:n1"}}},
		{name: "too few fields", in: "1|p|1\n", err: true},
		{name: "bad node count", in: "1|p|x|None\n", err: true},
		{name: "empty reason", in: "1|p|1|\n", err: true},
		{name: "empty partition", in: "1||1|None\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := slurm.ParsePending([]byte(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("ParsePending() error = %v, want error %v", err, tt.err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParsePending() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func FuzzParsePending(f *testing.F) {
	for _, name := range []string{"squeue-pending", "squeue-pending-no-nodes", "squeue-pending-future-24.11"} {
		f.Add(slurmtest.Real(name).Output.Stdout)
	}
	f.Add([]byte("7_3|a,b|2-4|Resources\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := slurm.ParsePending(data)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" || len(j.Partitions) == 0 || j.Nodes < 0 || j.Reason == "" {
				t.Fatalf("parsed an incomplete pending job: %+v", j)
			}
		}
	})
}

func TestLastBusy(t *testing.T) {
	t.Parallel()
	nodes, err := slurm.ParseShowNode(slurmtest.Real("show-node-idle").Output.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := nodes[0].LastBusy(time.UTC)
	if err != nil || !ok {
		t.Fatalf("LastBusy() = %v, %v, %v", got, ok, err)
	}
	if want := time.Date(2026, 11, 22, 22, 19, 28, 0, time.UTC); !got.Equal(want) {
		t.Errorf("LastBusy() = %v, want %v", got, want)
	}
	booted, ok, err := nodes[0].Booted(time.UTC)
	if want := time.Date(2026, 11, 22, 22, 10, 48, 0, time.UTC); err != nil || !ok || !booted.Equal(want) {
		t.Errorf("Booted() = %v, %v, %v, want %v", booted, ok, err, want)
	}
	for _, tt := range []struct {
		name, line string
		ok, err    bool
	}{
		{"none", "NodeName=n State=IDLE LastBusyTime=None", false, false},
		{"absent", "NodeName=n State=IDLE", false, false},
		{"bad", "NodeName=n State=IDLE LastBusyTime=yesterday", false, true},
	} {
		nodes, perr := slurm.ParseShowNode([]byte(tt.line))
		if perr != nil {
			t.Fatal(perr)
		}
		_, ok, err := nodes[0].LastBusy(nil)
		if ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("%s: LastBusy() ok=%v err=%v, want ok=%v err=%v", tt.name, ok, err, tt.ok, tt.err)
		}
	}
}

func TestReconsider(t *testing.T) {
	t.Parallel()
	argv := []string{"scontrol", "update", "jobid=7_3", "partition=a,b"}
	c, r := newClient(slurmtest.Case{Argv: argv})
	if err := c.Reconsider(context.Background(), slurm.PendingJob{ID: "7_3", Partitions: []string{"a", "b"}, Nodes: 1, Reason: "PartitionConfig"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(argv, r.Calls()[0].Argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	for _, bad := range []slurm.PendingJob{{ID: "1 2", Partitions: []string{"a"}}, {ID: "1"}, {ID: "1", Partitions: []string{"a b"}}} {
		if err := c.Reconsider(context.Background(), bad); err == nil {
			t.Errorf("Reconsider(%+v) accepted a bad job", bad)
		}
	}
}
