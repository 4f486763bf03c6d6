package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/charmed-slurm/operators/autoscaler/policy"
)

var app = policy.App{Name: "slurmd", Min: 1, Max: 6, IdleTime: time.Minute, ScaleOutStep: 4, ScaleInStep: 2, RegisterTimeout: 5 * time.Minute}

func idle(name string, d time.Duration) policy.Unit {
	return policy.Unit{Name: unitName(name), Age: time.Hour, Node: &policy.Node{Name: name, IdleFor: d}}
}

func busy(name string) policy.Unit {
	return policy.Unit{Name: unitName(name), Age: time.Hour, Node: &policy.Node{Name: name, Busy: true}}
}

func ours(name string, busy bool) policy.Unit {
	return policy.Unit{Name: unitName(name), Age: time.Hour, Node: &policy.Node{Name: name, Drain: true, OurDrain: true, Busy: busy}}
}

func starting(unit string, age time.Duration) policy.Unit { return policy.Unit{Name: unit, Age: age} }

func dying(unit string) policy.Unit { return policy.Unit{Name: unit, Dying: true} }

func unitName(node string) string { return "slurmd/" + node[len("slurmd-"):] }

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   policy.Input
		want policy.Decision
	}{{
		name: "burst of 12 one-node jobs on one busy node: add up to the step",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0")}, PendingJobs: 11, PendingNodes: 11},
		want: policy.Decision{Add: 4, Lines: []string{"slurmd: 11 pending jobs need 11 more nodes: adding 4"}},
	}, {
		name: "units still starting count as capacity",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), starting("slurmd/1", time.Second), starting("slurmd/2", time.Second)},
			PendingJobs: 3, PendingNodes: 3},
		want: policy.Decision{Add: 1, Lines: []string{"slurmd: 3 pending jobs need 1 more nodes: adding 1"}},
	}, {
		name: "never beyond max, dying units included",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), busy("slurmd-1"), busy("slurmd-2"), busy("slurmd-3"), dying("slurmd/4")},
			PendingJobs: 8, PendingNodes: 8},
		want: policy.Decision{Add: 1, Lines: []string{"slurmd: 8 pending jobs need 8 more nodes: adding 1"}},
	}, {
		name: "at max: not adding",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), busy("slurmd-1"), busy("slurmd-2"), busy("slurmd-3"), busy("slurmd-4"), dying("slurmd/5")},
			PendingJobs: 2, PendingNodes: 2},
		want: policy.Decision{Lines: []string{"slurmd: 2 pending jobs need 2 more nodes: at max 6 units (1 dying): not adding"}},
	}, {
		name: "idle nodes cover the demand: wait for the scheduler",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), idle("slurmd-1", 0)}, PendingJobs: 1, PendingNodes: 1},
		want: policy.Decision{Lines: []string{"slurmd: 1 pending jobs need 1 nodes: 1 idle, 0 starting: waiting for the scheduler"}},
	}, {
		name: "multi-node job counts its nodes",
		in:   policy.Input{App: app, Units: []policy.Unit{idle("slurmd-0", time.Hour)}, PendingJobs: 1, PendingNodes: 3},
		want: policy.Decision{Add: 2, Lines: []string{"slurmd: 1 pending jobs need 2 more nodes: adding 2"}},
	}, {
		name: "scale from zero",
		in:   policy.Input{App: policy.App{Name: "slurmd", Min: 0, Max: 3, ScaleOutStep: 1, ScaleInStep: 1, RegisterTimeout: time.Minute}, PendingJobs: 2, PendingNodes: 2},
		want: policy.Decision{Add: 1, Lines: []string{"slurmd: 2 pending jobs need 2 more nodes: adding 1"}},
	}, {
		name: "demand takes back a node drained for removal before adding",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), ours("slurmd-3", false)}, PendingJobs: 2, PendingNodes: 2},
		want: policy.Decision{Add: 1, Resume: []string{"slurmd-3"}, Lines: []string{
			"slurmd: slurmd-3 drained for removal but 2 pending jobs need nodes: resuming",
			"slurmd: 2 pending jobs need 1 more nodes: adding 1",
		}},
	}, {
		name: "failed add-unit waits for its backoff",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0")}, PendingJobs: 1, PendingNodes: 1,
			AddFailures: 2, RetryIn: 20 * time.Second, LastError: "quota exceeded"},
		want: policy.Decision{Lines: []string{"slurmd: 1 pending jobs need 1 more nodes: add-unit failed 2 times (quota exceeded): retrying in 20s"}},
	}, {
		name: "pending jobs: nothing is removed, however long a node idles",
		in:   policy.Input{App: app, Units: []policy.Unit{idle("slurmd-0", time.Hour), idle("slurmd-1", time.Hour)}, PendingJobs: 1, PendingNodes: 1},
		want: policy.Decision{Lines: []string{"slurmd: 1 pending jobs need 1 nodes: 2 idle, 0 starting: waiting for the scheduler"}},
	}, {
		name: "idle past the idle time: drain the longest idle first, within the step",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), idle("slurmd-1", 2*time.Minute), idle("slurmd-2", 5*time.Minute),
			idle("slurmd-3", 3*time.Minute), idle("slurmd-4", 30*time.Second)}},
		want: policy.Decision{Drain: []string{"slurmd-2", "slurmd-3"}, Lines: []string{
			"slurmd: slurmd-2 idle 5m0s: removing",
			"slurmd: slurmd-3 idle 3m0s: removing",
		}},
	}, {
		name: "the leader's node goes last among equally idle nodes",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-3"),
			{Name: "slurmd/0", Leader: true, Age: time.Hour, Node: &policy.Node{Name: "slurmd-0", IdleFor: time.Hour}},
			idle("slurmd-1", time.Hour), idle("slurmd-2", time.Hour)}},
		want: policy.Decision{Drain: []string{"slurmd-1", "slurmd-2"}, Lines: []string{
			"slurmd: slurmd-1 idle 1h0m0s: removing",
			"slurmd: slurmd-2 idle 1h0m0s: removing",
		}},
	}, {
		name: "never below min",
		in:   policy.Input{App: app, Units: []policy.Unit{idle("slurmd-0", time.Hour), idle("slurmd-1", time.Hour)}},
		want: policy.Decision{Drain: []string{"slurmd-0"}, Lines: []string{
			"slurmd: slurmd-0 idle 1h0m0s: removing",
			"slurmd: slurmd-1 idle over 1m0s: at min 1 units: keeping",
		}},
	}, {
		name: "min 0 removes the last idle node",
		in: policy.Input{App: policy.App{Name: "slurmd", Min: 0, Max: 3, IdleTime: time.Minute, ScaleOutStep: 1, ScaleInStep: 1, RegisterTimeout: time.Minute},
			Units: []policy.Unit{idle("slurmd-0", time.Hour)}},
		want: policy.Decision{Drain: []string{"slurmd-0"}, Lines: []string{"slurmd: slurmd-0 idle 1h0m0s: removing"}},
	}, {
		name: "a drained idle node of ours is removed; a busy one waits for its job",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), ours("slurmd-1", false), ours("slurmd-2", true)}},
		want: policy.Decision{Remove: []string{"slurmd/1"}, Lines: []string{
			"slurmd: slurmd-1 drained and idle: removing",
			"slurmd: slurmd-2 drained for removal but a job still runs on it: waiting",
		}},
	}, {
		name: "a drain by someone else is left alone",
		in: policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"),
			{Name: "slurmd/1", Age: time.Hour, Node: &policy.Node{Name: "slurmd-1", Drain: true, IdleFor: time.Hour}}}},
		want: policy.Decision{Lines: []string{"slurmd: 2 units (1 busy, 0 idle, 0 starting, 0 dying), no pending jobs: nothing to do"}},
	}, {
		name: "unusable nodes are neither capacity nor removed",
		in: policy.Input{App: app, Units: []policy.Unit{{Name: "slurmd/0", Age: time.Hour, Node: &policy.Node{Name: "slurmd-0", Unusable: true, IdleFor: time.Hour}}},
			PendingJobs: 1, PendingNodes: 1},
		want: policy.Decision{Add: 1, Lines: []string{"slurmd: 1 pending jobs need 1 more nodes: adding 1"}},
	}, {
		name: "a unit that never registers is removed after the timeout",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), starting("slurmd/1", 6*time.Minute), starting("slurmd/2", time.Minute)}},
		want: policy.Decision{Remove: []string{"slurmd/1"}, Lines: []string{"slurmd: slurmd/1 registered no node in 6m0s: removing"}},
	}, {
		name: "idle below the idle time: nothing to do",
		in:   policy.Input{App: app, Units: []policy.Unit{busy("slurmd-0"), idle("slurmd-1", 59*time.Second), dying("slurmd/2")}},
		want: policy.Decision{Lines: []string{"slurmd: 2 units (1 busy, 1 idle, 0 starting, 1 dying), no pending jobs: nothing to do"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := policy.Decide(tt.in)
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecideNeverExceedsMaxNorAddsAndRemovesAtOnce(t *testing.T) {
	t.Parallel()
	kinds := []func(int) policy.Unit{
		func(i int) policy.Unit { return busy("slurmd-" + string(rune('a'+i))) },
		func(i int) policy.Unit { return idle("slurmd-"+string(rune('a'+i)), time.Hour) },
		func(i int) policy.Unit { return ours("slurmd-"+string(rune('a'+i)), i%2 == 0) },
		func(i int) policy.Unit { return dying("slurmd/" + string(rune('a'+i))) },
		func(i int) policy.Unit { return starting("slurmd/"+string(rune('a'+i)), time.Second) },
	}
	for n := 0; n <= 7; n++ {
		for mix := 0; mix < 50; mix++ {
			var units []policy.Unit
			for i := 0; i < n; i++ {
				units = append(units, kinds[(mix+i*i)%len(kinds)](i))
			}
			for _, demand := range []int{0, 1, 5, 20} {
				got := policy.Decide(policy.Input{App: app, Units: units, PendingJobs: demand, PendingNodes: demand})
				if len(units) <= app.Max && len(units)+got.Add > app.Max {
					t.Errorf("%d units, demand %d: adding %d exceeds max %d", len(units), demand, got.Add, app.Max)
				}
				if got.Add > 0 && len(got.Drain) > 0 {
					t.Errorf("%d units, demand %d: adds and drains at once: %+v", len(units), demand, got)
				}
				if demand > 0 && len(got.Drain) > 0 {
					t.Errorf("drains %v while %d nodes are wanted", got.Drain, demand)
				}
			}
		}
	}
}

func TestWantsNodes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		reason string
		want   bool
	}{
		{"Resources", true}, {"Priority", true}, {"None", true}, {"PartitionConfig", true}, {"BadConstraints", true},
		{"ReqNodeNotAvail, UnavailableNodes:slurmd-1", true}, {"ReqNodeNotAvail, May be reserved for other job", true},
		{"Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions", true},
		{"Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions", true},
		{"Dependency", false}, {"JobHeldUser", false}, {"JobHeldAdmin", false}, {"BeginTime", false},
		{"PartitionDown", false}, {"PartitionInactive", false}, {"QOSMaxJobsPerUserLimit", false}, {"Reservation", false},
	} {
		if got := policy.WantsNodes(tt.reason); got != tt.want {
			t.Errorf("WantsNodes(%q) = %v, want %v", tt.reason, got, tt.want)
		}
	}
}

func TestHeld(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]bool{
		"PartitionConfig": true, "ReqNodeNotAvail, May be reserved for other job": true,
		"Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions": true,
		"Resources": false, "Priority": false, "Dependency": false,
	} {
		if got := policy.Held(reason); got != want {
			t.Errorf("Held(%q) = %v, want %v", reason, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 5 * time.Minute}, {60, 5 * time.Minute}} {
		if got := policy.Backoff(tt.failures, 10*time.Second, 5*time.Minute); got != tt.want {
			t.Errorf("Backoff(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

func TestAppCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		app   policy.App
		valid bool
	}{
		{"valid", app, true},
		{"min above max", policy.App{Name: "a", Min: 3, Max: 2, ScaleOutStep: 1, ScaleInStep: 1, RegisterTimeout: time.Second}, false},
		{"max 0", policy.App{Name: "a", ScaleOutStep: 1, ScaleInStep: 1, RegisterTimeout: time.Second}, false},
		{"no step", policy.App{Name: "a", Max: 2, RegisterTimeout: time.Second}, false},
		{"no name", policy.App{Max: 2, ScaleOutStep: 1, ScaleInStep: 1, RegisterTimeout: time.Second}, false},
		{"no register timeout", policy.App{Name: "a", Max: 2, ScaleOutStep: 1, ScaleInStep: 1}, false},
	} {
		if err := tt.app.Check(); (err == nil) != tt.valid {
			t.Errorf("%s: Check() = %v, want valid %v", tt.name, err, tt.valid)
		}
	}
}

func TestParseApp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec string
		want       policy.App
		err        bool
	}{
		{name: "defaults", spec: "slurmd", want: policy.App{Name: "slurmd", Max: 1, IdleTime: policy.DefaultIdleTime,
			RegisterTimeout: policy.DefaultRegisterTimeout, ScaleOutStep: policy.DefaultStep, ScaleInStep: policy.DefaultStep}},
		{name: "every key", spec: "gpu:min=1,max=6,idle=90s,out=3,in=2,register-timeout=2m", want: policy.App{Name: "gpu", Min: 1, Max: 6,
			IdleTime: 90 * time.Second, RegisterTimeout: 2 * time.Minute, ScaleOutStep: 3, ScaleInStep: 2}},
		{name: "unknown key", spec: "slurmd:maximum=3", err: true},
		{name: "not key=value", spec: "slurmd:max", err: true},
		{name: "bad number", spec: "slurmd:max=six", err: true},
		{name: "bad duration", spec: "slurmd:idle=10", err: true},
		{name: "min above max", spec: "slurmd:min=3,max=2", err: true},
		{name: "empty name", spec: ":max=2", err: true},
		{name: "unit instead of application", spec: "slurmd/0", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := policy.ParseApp(tt.spec)
			if (err != nil) != tt.err {
				t.Fatalf("ParseApp(%q) error = %v, want error %v", tt.spec, err, tt.err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseApp(%q) mismatch (-want +got):\n%s", tt.spec, d)
			}
		})
	}
}

func FuzzParseApp(f *testing.F) {
	for _, s := range []string{"slurmd", "gpu:min=1,max=6,idle=90s,out=3,in=2,register-timeout=2m", "a:min=0", "x:idle=-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := policy.ParseApp(spec)
		if err != nil {
			return
		}
		if err := a.Check(); err != nil {
			t.Fatalf("ParseApp(%q) returned an invalid app: %v", spec, err)
		}
		// Whatever it parsed, a decision stays within the limits.
		d := policy.Decide(policy.Input{App: a, PendingJobs: 100, PendingNodes: 100})
		if d.Add > a.Max || d.Add > a.ScaleOutStep {
			t.Fatalf("ParseApp(%q): adds %d beyond max %d or step %d", spec, d.Add, a.Max, a.ScaleOutStep)
		}
	})
}
