package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/munge"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// env is one charm with fakes, its files under a temporary root.
type env struct {
	t     *testing.T
	c     *Charm
	slurm *host
	svc   *fakeServices
	found map[string]bool // programs LookPath finds
	// waiter records what the hooks hand to the removal waiter.
	waiter *fakeWaiter
}

// seqReader gives 0, 1, 2, ... so that keys are reproducible but differ.
type seqReader struct{ n byte }

func (r *seqReader) Read(p []byte) (int, error) {
	r.n += 7 // each key starts elsewhere
	for i := range p {
		p[i] = r.n
		r.n++
	}
	return len(p), nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, slurm: newHost(filepath.Join(root, confDir)), svc: newFakeServices(), found: map[string]bool{}}
	e.slurm.mungeUp = func() bool { return e.svc.isActive("munged") }
	for _, p := range programs {
		e.found[p.Binary] = true
	}
	e.c = &Charm{
		Settings: charm.Settings{
			Root:         root,
			LookupUser:   func(string) (int, int, error) { return os.Getuid(), os.Getgid(), nil },
			PollInterval: time.Millisecond,
		},
		Slurm:        e.slurm,
		Services:     e.svc,
		MungeService: "munged",
		Hostname:     func() (string, error) { return "ctl", nil },
		LookPath: func(p string) (string, error) {
			if e.found[p] {
				return "/usr/bin/" + p, nil
			}
			return "", errors.New("not found")
		},
		StateFile:  filepath.Join(root, "charm", StateName),
		Rand:       &seqReader{},
		DeleteWait: time.Second,
	}
	e.waiter = &fakeWaiter{}
	e.c.Waiter = e.waiter
	return e
}

func (e *env) run(in jujutest.State, ev juju.Event) jujutest.State {
	e.t.Helper()
	out, err := jujutest.Run(e.t, in, ev, e.c.Router().Dispatch)
	if err != nil && !errors.Is(err, juju.ErrNoHandler) {
		e.t.Fatalf("%s: %v", ev.Name, err)
	}
	return out
}

func (e *env) read(p string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.c.Path(p))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) exists(p string) bool {
	_, err := os.Stat(e.c.Path(p))
	return err == nil
}

func baseState() jujutest.State {
	return jujutest.State{
		Unit:           "slurmctld/0",
		Leader:         true,
		PrivateAddress: "10.0.0.1",
		Config: map[string]any{
			"cluster-name": "charmed-slurm", "default-partition": "", "max-node-count": 1024,
			"slurm-conf-parameters": "",
		},
	}
}

// started runs config-changed on a fresh controller and returns the state after it.
func (e *env) started() jujutest.State {
	e.t.Helper()
	out := e.run(baseState(), jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusActive {
		e.t.Fatalf("controller not active: %+v", out.UnitStatus)
	}
	return out
}

func relation(id juju.RelationID, app string, bag map[string]string, units ...string) jujutest.Relation {
	r := jujutest.Relation{ID: id, RemoteApp: app, RemoteAppData: bag, RemoteUnits: map[string]map[string]string{}}
	for _, u := range units {
		r.RemoteUnits[u] = map[string]string{}
	}
	return r
}

func compute(t *testing.T, app, extra string) map[string]string {
	t.Helper()
	p, err := slurmconf.ParseParams(extra)
	if err != nil {
		t.Fatal(err)
	}
	d, err := slurmd.NewComputeData(app, p)
	if err != nil {
		t.Fatal(err)
	}
	return d.Encode()
}

func TestInstall(t *testing.T) {
	tests := []struct {
		name    string
		missing []string
		aptFail bool
		wantApt [][]string
		wantErr string
	}{
		{name: "all present", wantApt: nil},
		{name: "missing", missing: []string{"slurmctld", "scontrol", "munged"},
			wantApt: [][]string{{"apt-get", "update"}, {"apt-get", "install", "-y", "--no-install-recommends", "slurmctld", "slurm-client", "munge"}}},
		{name: "apt fails", missing: []string{"munged"}, aptFail: true, wantErr: "cannot install munge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for _, m := range tt.missing {
				e.found[m] = false
			}
			e.slurm.aptFail = tt.aptFail
			_, err := jujutest.Run(t, baseState(), jujutest.Hook(juju.Install), e.c.Router().Dispatch)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, c := range e.slurm.commands() {
				if c[0] == "apt-get" {
					got = append(got, c)
				}
			}
			if d := cmp.Diff(tt.wantApt, got); d != "" {
				t.Errorf("apt-get (-want +got):\n%s", d)
			}
			for _, d := range []string{confDir, stateSaveDir, logDir} {
				if !e.exists(d) {
					t.Errorf("%s not created", d)
				}
			}
		})
	}
}

func TestConfigureStartsController(t *testing.T) {
	e := newEnv(t)
	out := e.started()

	if len(out.Secrets) != 1 || out.Secrets[0].Label != "auth-key" {
		t.Fatalf("secrets: %+v", out.Secrets)
	}
	key, keyID, err := slurmd.DecodeAuthSecret(out.Secrets[0].Revisions[0])
	if err != nil || keyID != "1" || len(key) != keySize {
		t.Fatalf("auth secret: key %d bytes, id %q, %v", len(key), keyID, err)
	}
	if got := e.read("/etc/munge/munge.key"); got != string(key) {
		t.Errorf("munge key differs from the secret")
	}
	if fi, _ := os.Stat(e.c.Path("/etc/munge/munge.key")); fi.Mode().Perm() != 0o400 {
		t.Errorf("munge key mode %v", fi.Mode())
	}
	conf := e.read(confPath)
	for _, want := range []string{"SlurmctldHost=ctl(10.0.0.1)", "ClusterName=charmed-slurm", "AuthType=auth/munge",
		"MaxNodeCount=1024", "TreeWidth=65533", "SlurmctldParameters=enable_configless", "ReturnToService=2",
		"SelectType=select/cons_tres", "ProctrackType=proctrack/linuxproc", "PartitionName=unconfigured State=INACTIVE Hidden=YES"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("slurm.conf lacks %q:\n%s", want, conf)
		}
	}
	if d := cmp.Diff([]string{"configure munged", "enable munged", "spawn munged", "configure slurmctld", "enable slurmctld", "start slurmctld"}, e.svc.Calls()); d != "" {
		t.Errorf("service calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]juju.Port{{Number: 6817, Protocol: "tcp"}}, out.Ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(out.UnitStatus.Message, "slurmctld up, 0 nodes") {
		t.Errorf("status %q", out.UnitStatus.Message)
	}

	// The same configuration again: nothing restarted, nothing reconfigured.
	e.svc.ResetCalls()
	out = e.run(out, jujutest.Hook(juju.Start))
	if n := e.slurm.count("scontrol", "reconfigure"); n != 0 {
		t.Errorf("%d reconfigures, want 0", n)
	}
	for _, c := range e.svc.Calls() {
		if strings.HasPrefix(c, "restart") || strings.HasPrefix(c, "respawn") || strings.HasPrefix(c, "start") {
			t.Errorf("unexpected %q", c)
		}
	}
	if len(out.Secrets) != 1 {
		t.Errorf("secret created again: %+v", out.Secrets)
	}
}

func TestSlurmConfParameters(t *testing.T) {
	e := newEnv(t)
	out := e.started()
	// An admin's comment survives the charm's edits.
	conf := e.read(confPath)
	conf = strings.Replace(conf, "MinJobAge=300\n", "# keep job records for a while\nMinJobAge=300\n", 1)
	if err := os.WriteFile(e.c.Path(confPath), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Config["slurm-conf-parameters"] = "MinJobAge=10 DebugFlags=Power"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	conf = e.read(confPath)
	for _, want := range []string{"# keep job records for a while\nMinJobAge=10\n", "DebugFlags=Power\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %q:\n%s", want, conf)
		}
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
		t.Errorf("%d reconfigures, want 1", n)
	}
	// Dropping the parameters restores the default and removes the extra key.
	out.Config["slurm-conf-parameters"] = ""
	e.run(out, jujutest.Hook(juju.ConfigChanged))
	conf = e.read(confPath)
	if !strings.Contains(conf, "MinJobAge=300\n") || strings.Contains(conf, "DebugFlags") {
		t.Errorf("parameters not reverted:\n%s", conf)
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 2 {
		t.Errorf("%d reconfigures, want 2", n)
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name, option string
		value        any
		want         string
	}{
		{"managed key", "slurm-conf-parameters", "SlurmctldHost=x", "slurm-conf-parameters: SlurmctldHost is managed by the charm and cannot be set"},
		{"managed key case", "slurm-conf-parameters", "maxnodecount=5", "slurm-conf-parameters: MaxNodeCount is managed by the charm"},
		{"entry key", "slurm-conf-parameters", "PartitionName=x", "slurm-conf-parameters: PartitionName is managed"},
		{"unknown key", "slurm-conf-parameters", "MinJobAg=10", `slurm-conf-parameters: unknown slurm.conf key "MinJobAg" (did you mean MinJobAge?)`},
		{"syntax", "slurm-conf-parameters", `MinJobAge="10`, "slurm-conf-parameters: "},
		{"twice", "slurm-conf-parameters", "MinJobAge=1 minjobage=2", `slurm-conf-parameters: line 1, column 13: duplicate key "minjobage"`},
		{"no value", "slurm-conf-parameters", `MinJobAge=""`, "slurm-conf-parameters: MinJobAge has no value"},
		{"empty", "slurm-conf-parameters", "MinJobAge=", `slurm-conf-parameters: line 1, column 11: empty value for key "MinJobAge"`},
		{"cluster name", "cluster-name", "Bad Name", `cluster-name: "Bad Name" is not a valid cluster name`},
		{"max nodes", "max-node-count", 0, "max-node-count: 0 is out of range"},
		{"partition", "default-partition", "a b", `default-partition: "a b" is not a valid partition name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			out := e.started()
			before := e.read(confPath)
			out.Config[tt.option] = tt.value
			out = e.run(out, jujutest.Hook(juju.ConfigChanged))
			if out.UnitStatus.Code != juju.StatusBlocked || !strings.HasPrefix(out.UnitStatus.Message, tt.want) {
				t.Errorf("status %+v, want blocked %q", out.UnitStatus, tt.want)
			}
			if after := e.read(confPath); after != before {
				t.Errorf("slurm.conf changed by a refused configuration")
			}
			if n := e.slurm.count("scontrol", "reconfigure"); n != 0 {
				t.Errorf("%d reconfigures, want 0", n)
			}
		})
	}
}

func TestClusterNameChangeRefused(t *testing.T) {
	e := newEnv(t)
	out := e.started()
	out.Config["cluster-name"] = "other"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	want := `cluster-name: cannot change from "charmed-slurm" to "other" after slurmctld has started; set it back to "charmed-slurm"`
	if d := cmp.Diff(jujuStatus(juju.StatusBlocked, want), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if !strings.Contains(e.read(confPath), "ClusterName=charmed-slurm\n") {
		t.Errorf("ClusterName rewritten")
	}
	out.Config["cluster-name"] = "charmed-slurm"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v after reverting", out.UnitStatus)
	}
}

func jujuStatus(code juju.StatusCode, msg string) juju.WorkloadStatus {
	return juju.WorkloadStatus{Code: code, Message: msg}
}

func TestNonLeaderStandsBy(t *testing.T) {
	e := newEnv(t)
	in := baseState()
	in.Unit, in.Leader = "slurmctld/1", false
	out := e.run(in, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(out.UnitStatus.Message, "a backup controller needs shared storage: integrate slurmctld with filesystem-client") {
		t.Errorf("status %+v", out.UnitStatus)
	}
	if len(out.Secrets) != 0 || len(e.svc.Calls()) != 0 || e.exists(confPath) {
		t.Errorf("a standby acted: secrets %v, services %v", out.Secrets, e.svc.Calls())
	}
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}
	out = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if out.Relations[0].LocalAppData != nil || e.exists(partitionPath("slurmd")) {
		t.Errorf("a standby published or wrote a partition")
	}
}

func TestSlurmdRelation(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", nil, "slurmd/0")}

	// Joined: the secret is granted and ControllerData published; no partition yet.
	out := e.run(in, jujutest.RelationHook(juju.RelationJoined, "slurmd:1", "slurmd/0"))
	if d := cmp.Diff([]jujutest.Grant{{Relation: "slurmd:1"}}, out.Secrets[0].Grants); d != "" {
		t.Errorf("grants (-want +got):\n%s", d)
	}
	bag, err := slurmd.DecodeControllerBag(out.Relations[0].LocalAppData)
	if err != nil {
		t.Fatal(err)
	}
	// slurm_version is the controller's own (slurmctld -V): slurmd units check theirs.
	want := slurmd.ControllerBag{Controllers: []string{"10.0.0.1:6817"}, AuthSecretID: string(out.Secrets[0].ID), ClusterName: "charmed-slurm", GresTypes: []string{"gpu"},
		SlurmVersion: slurm.Version{Major: 22, Minor: 5, Micro: 8}}
	if d := cmp.Diff(want, bag); d != "" {
		t.Errorf("controller bag (-want +got):\n%s", d)
	}
	if e.slurm.count("scontrol", "reconfigure") != 0 {
		t.Errorf("reconfigured on join")
	}

	// Ready: the partition file and include are written, one reconfigure.
	out.Relations[0].RemoteAppData = compute(t, "slurmd", "MaxTime=1:00:00")
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	wantPart := "# Partition of the slurmd application \"slurmd\", managed by the slurmctld charm.\n" +
		"NodeSet=slurmd Feature=slurmd\nPartitionName=slurmd Nodes=slurmd MaxTime=1:00:00 Default=YES\n"
	if d := cmp.Diff(wantPart, e.read(partitionPath("slurmd"))); d != "" {
		t.Errorf("partition file (-want +got):\n%s", d)
	}
	conf := e.read(confPath)
	if !strings.Contains(conf, "Include partition-slurmd.conf\n") || strings.Contains(conf, "unconfigured") {
		t.Errorf("slurm.conf:\n%s", conf)
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
		t.Errorf("%d reconfigures, want 1", n)
	}

	// The same data again (another unit's relation-changed): no reconfigure.
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
		t.Errorf("%d reconfigures after unchanged data, want 1", n)
	}

	// Changed partition-config: exactly one more.
	out.Relations[0].RemoteAppData = compute(t, "slurmd", "MaxTime=2:00:00")
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if n := e.slurm.count("scontrol", "reconfigure"); n != 2 {
		t.Errorf("%d reconfigures after a change, want 2", n)
	}

	// A second application is not the default; default-partition moves Default=YES with one
	// reconfigure.
	out.Relations = append(out.Relations, relation("slurmd:2", "gpu", compute(t, "gpu", ""), "gpu/0"))
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
	if got := e.read(partitionPath("gpu")); strings.Contains(got, "Default") {
		t.Errorf("gpu partition is default:\n%s", got)
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 3 {
		t.Errorf("%d reconfigures, want 3", n)
	}
	out.Config["default-partition"] = "gpu"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if !strings.Contains(e.read(partitionPath("gpu")), "Default=YES") || strings.Contains(e.read(partitionPath("slurmd")), "Default") {
		t.Errorf("default not moved to gpu")
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 4 {
		t.Errorf("%d reconfigures, want 4", n)
	}
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}
}

func TestBadComputeData(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", "MaxTime=1:00:00"), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	before := e.read(partitionPath("slurmd"))

	tests := []struct {
		name  string
		bag   map[string]string
		field string
	}{
		{"bad partition key", map[string]string{"version": "1", "nodeset": "NodeSet=slurmd Feature=slurmd", "partition": "PartitionName=slurmd Nodes=slurmd MaxTme=1"}, `"partition"`},
		{"other app", map[string]string{"version": "1", "nodeset": "NodeSet=gpu Feature=gpu", "partition": "PartitionName=gpu Nodes=gpu"}, `"nodeset"`},
		{"bad version", map[string]string{"version": "9", "nodeset": "NodeSet=slurmd Feature=slurmd", "partition": "PartitionName=slurmd Nodes=slurmd"}, `"version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := out
			in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", tt.bag, "slurmd/0")}
			got := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
			if got.UnitStatus.Code != juju.StatusBlocked || !strings.HasPrefix(got.UnitStatus.Message, "slurmd application slurmd: invalid "+tt.field) {
				t.Errorf("status %+v, want blocked naming %s", got.UnitStatus, tt.field)
			}
			if after := e.read(partitionPath("slurmd")); after != before {
				t.Errorf("partition changed:\n%s", after)
			}
			if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
				t.Errorf("%d reconfigures, want 1", n)
			}
		})
	}
	// Fixed data clears the problem.
	in = out
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", "MaxTime=1:00:00"), "slurmd/0")}
	got := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if got.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v after fixing the data", got.UnitStatus)
	}
}

// withApp returns a started controller with application app related and its partition written.
func (e *env) withApp(app string, units ...string) jujutest.State {
	e.t.Helper()
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", app, compute(e.t, app, ""), units...)}
	return e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", units[0]))
}

func TestDepartedIdleNodeDrainedAndDeleted(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.addNode("slurmd-1", "slurmd", false)
	delete(in.Relations[0].RemoteUnits, "slurmd/1")
	out := e.run(in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1"))
	if e.slurm.hasNode("slurmd-1") || !e.slurm.hasNode("slurmd-0") {
		t.Errorf("nodes: %v", e.slurm.NodeNames())
	}
	if n := e.slurm.count("scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=unit slurmd/1 removed"); n != 1 {
		t.Errorf("%d drains with the removal reason, want 1: %v", n, e.slurm.commands())
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
		t.Errorf("%d reconfigures, want 1 (the partition's)", n)
	}
	if out.UnitStatus.Code != juju.StatusActive || strings.Contains(out.UnitStatus.Message, "removing") {
		t.Errorf("status %+v", out.UnitStatus)
	}
}

func TestDepartedBusyNodeWaitsForItsJobs(t *testing.T) {
	e := newEnv(t)
	in, departed := e.departedWithJob(true) // drained by the unit itself
	out := e.run(in, departed)
	if !e.slurm.hasNode("slurmd-1") {
		t.Fatal("a node with a running job was deleted")
	}
	if e.slurm.count("scontrol", "delete") != 0 {
		t.Errorf("delete attempted on a busy node")
	}
	if !strings.Contains(out.UnitStatus.Message, "removing slurmd-1 once idle") {
		t.Errorf("status %q", out.UnitStatus.Message)
	}
	// update-status while the job runs: still there; once it ends: deleted.
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if !e.slurm.hasNode("slurmd-1") {
		t.Fatal("deleted while busy")
	}
	e.slurm.EndJobs()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if e.slurm.hasNode("slurmd-1") {
		t.Errorf("node not deleted after its job ended")
	}
	if strings.Contains(out.UnitStatus.Message, "removing") {
		t.Errorf("status %q", out.UnitStatus.Message)
	}
}

// TestControllerHooksDoOnePass: relation-departed of a unit whose node runs a job, and
// relation-broken of an application whose partition holds one, make one pass over Slurm and
// return with the job still running: the node stays pending and the partition being removed,
// handed to the removal waiter. The poll interval is a millisecond: a hook that polled for
// the job would ask squeue more than once, and one that waited otherwise would run into the
// guard (its context ends after 30 s); either fails the test.
func TestControllerHooksDoOnePass(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(e *env) (jujutest.State, juju.Event)
		want  watchList
		// kept reports whether what the job holds is still there.
		kept func(e *env) bool
	}{
		{name: "relation-departed of a busy unit", setup: func(e *env) (jujutest.State, juju.Event) {
			return e.departedWithJob(true)
		}, want: watchList{Nodes: []string{"slurmd-1"}}, kept: func(e *env) bool { return e.slurm.hasNode("slurmd-1") }},
		{name: "relation-broken of an application with a running job", setup: func(e *env) (jujutest.State, juju.Event) {
			in := e.withApp("gpu", "gpu/0")
			e.slurm.addNode("gpu-0", "gpu", false)
			e.slurm.addJob("gpu", "gpu-0")
			return in, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", "")
		}, want: watchList{Partitions: []string{"gpu"}}, kept: func(e *env) bool { return e.exists(partitionPath("gpu")) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			in, ev := tt.setup(e)
			squeues := 0
			e.slurm.Before(func(argv []string) {
				if argv[0] == "squeue" {
					squeues++
				}
			})
			defer e.slurm.Before(nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := jujutest.Run(t, in, ev, func(_ context.Context, hc *juju.HookContext) error {
				return e.c.Router().Dispatch(ctx, hc)
			})
			if err != nil || ctx.Err() != nil {
				t.Fatalf("%s: %v (guard: %v): the hook waited", ev.Name, err, ctx.Err())
			}
			if squeues > 1 {
				t.Errorf("%d squeue calls, want at most 1: one pass", squeues)
			}
			if !tt.kept(e) {
				t.Error("removed while its job runs")
			}
			if d := cmp.Diff(tt.want, e.waiter.last()); d != "" {
				t.Errorf("watch list handed to the waiter (-want +got):\n%s", d)
			}
			if out.UnitStatus.Code == juju.StatusActive && !strings.Contains(out.UnitStatus.Message, "removing slurmd-1") {
				t.Errorf("status %+v does not say what is waited for", out.UnitStatus)
			}
		})
	}
}

// departedWithJob returns a controller with application slurmd whose unit slurmd/1 has
// left while its node slurmd-1 (drained by the unit when drained is set) runs a job, and
// that unit's relation-departed event.
func (e *env) departedWithJob(drained bool) (jujutest.State, juju.Event) {
	e.t.Helper()
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
	e.slurm.addNode("slurmd-1", "slurmd", drained)
	e.slurm.addJob("slurmd", "slurmd-1")
	delete(in.Relations[0].RemoteUnits, "slurmd/1")
	return in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1")
}

// guarded runs ev like run, with each Slurm poll (squeue, scontrol show) calling tick
// first, and cancels the hook's context after 2000 polls. It reports whether it had to:
// a bounded wait never needs the guard.
func (e *env) guarded(in jujutest.State, ev juju.Event, tick func()) (jujutest.State, bool) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	e.slurm.Before(func(argv []string) {
		if argv[0] != "squeue" && (len(argv) < 2 || argv[1] != "show") {
			return
		}
		if n++; n > 2000 {
			cancel()
		}
		tick()
	})
	defer e.slurm.Before(nil)
	out, err := jujutest.Run(e.t, in, ev, func(_ context.Context, hc *juju.HookContext) error {
		return e.c.Router().Dispatch(ctx, hc)
	})
	if err != nil && ctx.Err() == nil {
		e.t.Fatalf("%s: %v", ev.Name, err)
	}
	return out, ctx.Err() != nil
}

func TestDepartedUnknownNodeAndUnreachable(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
	// The unit deleted its node itself: nothing to do.
	out := e.run(in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1"))
	if strings.Contains(out.UnitStatus.Message, "removing") || e.slurm.count("scontrol", "delete") != 0 {
		t.Errorf("status %q, calls %v", out.UnitStatus.Message, e.slurm.commands())
	}
	// slurmctld unreachable: the node stays pending, the hook does not fail.
	e.slurm.SetUnreachable(true)
	out = e.run(out, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/0"))
	st, _ := e.c.loadState()
	if _, ok := st.Pending["slurmd-0"]; !ok {
		t.Errorf("pending: %v", st.Pending)
	}
	if out.UnitStatus.Code != juju.StatusWaiting {
		t.Errorf("status %+v", out.UnitStatus)
	}
}

func TestApplicationRemoved(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("gpu", "gpu/0")
	e.slurm.addNode("gpu-0", "gpu", false)
	e.slurm.addJob("gpu", "gpu-0")
	ctld := e.svc.count("start slurmctld") + e.svc.count("restart slurmctld") + e.svc.count("respawn slurmctld")

	out := e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""))
	if e.slurm.count("scontrol", "update", "partitionname=gpu", "state=INACTIVE") != 1 {
		t.Errorf("partition not set INACTIVE: %v", e.slurm.commands())
	}
	if d := cmp.Diff(jujuStatus(juju.StatusWaiting, "waiting for 1 jobs in partition gpu to finish before removing it"), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if !strings.Contains(e.read(partitionPath("gpu")), "State=INACTIVE") || !strings.Contains(e.read(confPath), "Include partition-gpu.conf") {
		t.Errorf("partition removed while a job runs")
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 1 {
		t.Errorf("%d reconfigures, want 1 (the partition's creation)", n)
	}

	// The job completed but its record is kept (MinJobAge): still waiting.
	e.slurm.EndJobs()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if out.UnitStatus.Code != juju.StatusWaiting || !e.exists(partitionPath("gpu")) {
		t.Errorf("removed while a job record remains: %+v", out.UnitStatus)
	}

	// The record is purged: nodes deleted, include and file removed, one reconfigure.
	e.slurm.PurgeJobs()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if e.exists(partitionPath("gpu")) || strings.Contains(e.read(confPath), "partition-gpu") {
		t.Errorf("partition not removed:\n%s", e.read(confPath))
	}
	if !strings.Contains(e.read(confPath), "PartitionName=unconfigured") {
		t.Errorf("placeholder partition not back")
	}
	if e.slurm.hasNode("gpu-0") {
		t.Errorf("node record of the removed application left")
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 2 {
		t.Errorf("%d reconfigures, want 2", n)
	}
	if got := e.svc.count("start slurmctld") + e.svc.count("restart slurmctld") + e.svc.count("respawn slurmctld"); got != ctld {
		t.Errorf("slurmctld restarted")
	}
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}
	st, _ := e.c.loadState()
	if len(st.Apps) != 0 || len(st.Removing) != 0 {
		t.Errorf("state: %+v", st)
	}
}

func TestApplicationRemovedKeepsOthers(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	in.Relations = append(in.Relations, relation("slurmd:2", "gpu", compute(t, "gpu", ""), "gpu/0"))
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
	// Removing the default partition's application makes the next one the default.
	e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""))
	if e.exists(partitionPath("slurmd")) {
		t.Errorf("idle partition not removed at once")
	}
	if !strings.Contains(e.read(partitionPath("gpu")), "Default=YES") {
		t.Errorf("gpu not made default:\n%s", e.read(partitionPath("gpu")))
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != 3 {
		t.Errorf("%d reconfigures, want 3", n)
	}
}

func TestUpdateStatusCounts(t *testing.T) {
	e := newEnv(t)
	out := e.run(e.threeNodes(), jujutest.Hook(juju.UpdateStatus))
	if d := cmp.Diff(jujuStatus(juju.StatusActive, "slurmctld up, 3 nodes (1 idle, 1 allocated, 1 drained)"), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// A drained node that still runs a job is draining, not drained.
	e.slurm.addNode("slurmd-3", "slurmd", false)
	e.slurm.addJob("slurmd", "slurmd-3")
	if out, err := e.slurm.Run(context.Background(), []string{"scontrol", "update", "nodename=slurmd-3", "state=drain", "reason=test"}, []string{"SLURM_CONF=" + confPath}); err != nil || out.ExitCode != 0 {
		t.Fatalf("cannot drain slurmd-3: %v %s", err, out.Stderr)
	}
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if d := cmp.Diff(jujuStatus(juju.StatusActive, "slurmctld up, 4 nodes (1 idle, 1 allocated, 1 drained, 1 draining)"), out.UnitStatus); d != "" {
		t.Errorf("status with a draining node (-want +got):\n%s", d)
	}
	e.svc.Exit(svcSlurmctld)
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if d := cmp.Diff(jujuStatus(juju.StatusMaintenance, "slurmctld is not running"), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

func TestStartFailure(t *testing.T) {
	e := newEnv(t)
	e.svc.FailStarts(errors.New("exited quickly with code 1"))
	_, err := jujutest.Run(t, baseState(), jujutest.Hook(juju.ConfigChanged), e.c.Router().Dispatch)
	if err == nil || !strings.Contains(err.Error(), "cannot start munged") {
		t.Errorf("error %v", err)
	}
	// The failed hook keeps what it learnt of the host (the Slurm version, the secret it
	// created) but neither its record of Juju writes nor its status cache: Juju discards
	// the former, and the next hook sets the status again.
	st, err := e.c.loadState()
	if err != nil {
		t.Fatal(err)
	}
	if st.SlurmVersion != "22.05.8" || st.SecretID == "" || st.Published != nil || st.StatusCache != (charm.StatusCache{}) {
		t.Errorf("state after a failed hook: %+v", st)
	}
}

func TestAuthSlurmKey(t *testing.T) {
	e := newEnv(t)
	e.slurm.version = "slurm 23.11.4"
	e.started()
	conf := e.read(confPath)
	if !strings.Contains(conf, "AuthType=auth/slurm\n") || !strings.Contains(conf, "CredType=cred/slurm\n") {
		t.Errorf("slurm.conf:\n%s", conf)
	}
	if !e.exists("/etc/slurm/slurm.key") || e.exists("/etc/munge/munge.key") {
		t.Errorf("key files wrong")
	}
	if e.svc.count("restart munged") != 0 {
		t.Errorf("munged started with auth/slurm")
	}
}

func TestStateFileIsPrivate(t *testing.T) {
	e := newEnv(t)
	e.started()
	fi, err := os.Stat(e.c.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state mode %v", fi.Mode())
	}
	if err := os.WriteFile(e.c.StateFile, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = jujutest.Run(t, baseState(), jujutest.Hook(juju.UpdateStatus), e.c.Router().Dispatch)
	if err == nil || !strings.Contains(err.Error(), StateName) {
		t.Errorf("corrupt state: error %v", err)
	}
}

// TestStateInCharmDir checks that the production charm (no StateFile) keeps its state as
// StateName in the unit's charm directory, through the kit's state-file rule, and nothing
// below Root.
func TestStateInCharmDir(t *testing.T) {
	e := newEnv(t)
	e.c.StateFile = ""
	dir := t.TempDir()
	k, err := e.c.lifecycle().Begin(context.Background(), &juju.HookContext{Event: juju.Event{CharmDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	k.State.ClusterName = "charmed-slurm"
	if err := k.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateName)); err != nil {
		t.Errorf("state not in the charm dir: %v", err)
	}
	if e.exists("/var/lib/slurmctld-operator") {
		t.Errorf("state written below root too")
	}
}

// A node belongs to an application by its name, never by its features: node-config may give a
// slurmd node the feature "gpu", and removing the gpu application must not delete it.
func TestApplicationRemovedKeepsNodesWithItsFeature(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0")
	in.Relations = append(in.Relations, relation("slurmd:2", "gpu", compute(t, "gpu", ""), "gpu/0"))
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.SetFeatures("slurmd-0", "slurmd", "gpu")
	e.slurm.addNode("gpu-0", "gpu", false)
	e.slurm.addNode("admin-node", "gpu", false)
	e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:2", ""))
	if e.slurm.hasNode("gpu-0") {
		t.Errorf("node gpu-0 of the removed application was kept")
	}
	for _, n := range []string{"slurmd-0", "admin-node"} {
		if !e.slurm.hasNode(n) {
			t.Errorf("node %s deleted with application gpu: it is not one of gpu's units", n)
		}
	}
}

// TestMungedReadiness: munged is respawned (no supervisor stay-up wait) and its readiness is a
// credential from `munge -n`; a munged that never answers fails the hook, naming it, before
// slurmctld starts.
func TestMungedReadiness(t *testing.T) {
	e := newEnv(t)
	e.started()
	if n := e.slurm.count(munge.ClientPath, "-n"); n == 0 {
		t.Errorf("munged's readiness never checked")
	}

	e = newEnv(t)
	e.c.MungeTimeout = 20 * time.Millisecond
	e.slurm.mungeUp = func() bool { return false }
	_, err := jujutest.Run(t, baseState(), jujutest.Hook(juju.ConfigChanged), e.c.Router().Dispatch)
	if err == nil || !strings.Contains(err.Error(), "cannot wait for munged to answer") {
		t.Fatalf("got %v, want an error about munged", err)
	}
	if e.svc.isActive(svcSlurmctld) {
		t.Error("slurmctld started although munged does not answer")
	}
}

// partitionPath is the live partition file of app, relative to the charm's root.
func partitionPath(app string) string { return confDir + "/" + partitionInclude(app) }

// TestRemovedPartitionPendingJobs: pending jobs of a removed application's partition are
// named in the status with the action that settles them; settle-jobs moves them (or cancels
// them) and the partition goes once the running job ends too.
func TestRemovedPartitionPendingJobs(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("gpu", "gpu/0")
	in.Relations = append(in.Relations, relation("slurmd:2", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "slurmd/0"))
	e.slurm.addNode("gpu-0", "gpu", false)
	e.slurm.addJob("gpu", "gpu-0")
	e.slurm.addJob("gpu", "")
	e.slurm.addJob("gpu", "")

	out := e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""))
	want := "removing partition gpu: pending jobs 2,3 can never run there; run settle-jobs partition=gpu with move-to=<partition> or cancel=true (also waiting for 1 other jobs to finish)"
	if d := cmp.Diff(jujuStatus(juju.StatusBlocked, want), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}

	for _, tt := range []struct {
		name   string
		params map[string]any
		fail   string
	}{
		{"not being removed", map[string]any{"partition": "slurmd", "cancel": true}, `partition: "slurmd" is not being removed`},
		{"neither", map[string]any{"partition": "gpu"}, "give exactly one of"},
		{"both", map[string]any{"partition": "gpu", "move-to": "slurmd", "cancel": true}, "give exactly one of"},
		{"unknown target", map[string]any{"partition": "gpu", "move-to": "nope"}, `move-to: "nope" is not a partition`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := out
			in.Action = jujutest.ActionState{Params: tt.params}
			got := e.run(in, jujutest.ActionEvent("settle-jobs")).Action
			if !got.Failed || !strings.Contains(got.Message, tt.fail) {
				t.Errorf("action failure %q, want %q", got.Message, tt.fail)
			}
		})
	}

	out.Action = jujutest.ActionState{Params: map[string]any{"partition": "gpu", "move-to": "slurmd"}}
	out = e.run(out, jujutest.ActionEvent("settle-jobs"))
	if out.Action.Failed || out.Action.Results["moved"] != "2,3" {
		t.Fatalf("settle-jobs: failed %q, results %v", out.Action.Message, out.Action.Results)
	}
	if out.UnitStatus.Code != juju.StatusWaiting {
		t.Errorf("status after settling %+v, want waiting for the running job", out.UnitStatus)
	}
	if e.slurm.count("scancel") != 0 {
		t.Errorf("a job was cancelled: %v", e.slurm.commands())
	}
	e.slurm.EndJobs()
	e.slurm.PurgeJobs()
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if e.exists(partitionPath("gpu")) {
		t.Errorf("partition gpu not removed once settled and its running job gone")
	}
}

// TestDepartedStuckNodeIsDeleted: a departed unit's node that Slurm 22.05 leaves ALLOCATED
// with no job (bug 16434, slurmtest's Wedge) is set DOWN, naming its removal, and deleted
// once it has stayed so for StuckFor, across update-status hooks; a node with a running
// job is never set down.
func TestDepartedStuckNodeIsDeleted(t *testing.T) {
	// The node drained by the controller's first Step, or by its unit before it: a first
	// Step that waits for the jobs to end (nodeRemovals.occupied) still finds it stuck.
	for _, byUnit := range []bool{false, true} {
		t.Run(fmt.Sprintf("drained by its unit %v", byUnit), func(t *testing.T) {
			e := newEnv(t)
			e.c.StuckFor = time.Nanosecond
			in, departed := e.departedWithJob(byUnit)
			out := e.run(in, departed)
			for range 2 {
				out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			}
			down := []string{"scontrol", "update", "nodename=slurmd-1", "state=down"}
			if !e.slurm.hasNode("slurmd-1") || e.slurm.count(down...) != 0 {
				t.Fatalf("node with a running job removed or set down: %v", e.slurm.commands())
			}
			e.slurm.Wedge("slurmd-1")
			out = e.run(out, jujutest.Hook(juju.UpdateStatus)) // busy with no job: the clock starts
			if !e.slurm.hasNode("slurmd-1") {
				t.Fatal("deleted at the first sight of no job")
			}
			out = e.run(out, jujutest.Hook(juju.UpdateStatus))
			if e.slurm.hasNode("slurmd-1") || strings.Contains(out.UnitStatus.Message, "removing") {
				t.Errorf("stuck node not deleted: status %q", out.UnitStatus.Message)
			}
			want := append(down, "reason=unit slurmd/1 removed: busy with no job (Slurm bug 16434), set down to delete it")
			if n := e.slurm.count(want...); n != 1 {
				t.Errorf("%d downs naming the removal, want 1: %v", n, e.slurm.commands())
			}
		})
	}
}

// TestDeleteNodeWaitIsBounded: delete-node force=true waits at most DeleteWait for the
// cancelled jobs; jobs that keep running (here a new one starts after each scancel) make
// the action fail naming the node, by itself: the guard of TestDepartedWaitIsBounded fails
// the test otherwise.
func TestDeleteNodeWaitIsBounded(t *testing.T) {
	e := newEnv(t)
	e.c.DeleteWait = 50 * time.Millisecond
	in := e.withApp("slurmd", "slurmd/0")
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.addJob("slurmd", "slurmd-0")
	in.Action = jujutest.ActionState{Params: map[string]any{"nodes": "slurmd-0", "force": true}}
	scancels := 0
	out, guarded := e.guarded(in, jujutest.ActionEvent("delete-node"), func() {
		if n := e.slurm.count("scancel"); n > scancels {
			scancels = n
			e.slurm.addJob("slurmd", "slurmd-0")
		}
	})
	if guarded {
		t.Fatal("the action did not return by itself: the wait is not bounded")
	}
	if !out.Action.Failed || !strings.HasPrefix(out.Action.Message, "node slurmd-0: not deleted within 50ms") || !e.slurm.hasNode("slurmd-0") {
		t.Errorf("action failed %v %q; node kept %v", out.Action.Failed, out.Action.Message, e.slurm.hasNode("slurmd-0"))
	}
}

// TestUpdateStatusReadsNodesOnce: one `scontrol show node -o` serves the reconcile of a
// departed unit's node its unit deleted already, the partition check and the node counts;
// a partition that lost a node (Slurm bug 16295) is still found and repaired.
func TestUpdateStatusReadsNodesOnce(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.addNode("slurmd-1", "slurmd", false)
	e.slurm.addJob("slurmd", "slurmd-1")
	// slurmd/1 left; its relation-departed found the node busy. The unit then deleted it.
	delete(in.Relations[0].RemoteUnits, "slurmd/1")
	out := e.run(in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", "slurmd/1"))
	if st, _ := e.c.loadState(); len(st.Pending) != 1 {
		t.Fatalf("pending %v, want slurmd-1", st.Pending)
	}
	e.slurm.EndJobs()
	e.slurm.PurgeJobs()
	if _, err := e.slurm.Run(context.Background(), []string{"scontrol", "delete", "nodename=slurmd-1"}, []string{"SLURM_CONF=" + confPath}); err != nil {
		t.Fatal(err)
	}
	n := len(e.slurm.commands())
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	want := [][]string{{"scontrol", "show", "node", "-o"}}
	if d := cmp.Diff(want, e.slurm.commands()[n:]); d != "" {
		t.Errorf("Slurm commands of update-status (-want +got):\n%s", d)
	}
	if st, _ := e.c.loadState(); len(st.Pending) != 0 {
		t.Errorf("pending %v after the node was gone", st.Pending)
	}
	if d := cmp.Diff(jujuStatus(juju.StatusActive, "slurmctld up, 1 nodes (1 idle, 0 allocated, 0 drained)"), out.UnitStatus); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// A node lost from its partition is seen in the same list and repaired.
	e.slurm.Lose("slurmd-0")
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if e.slurm.Lost("slurmd-0") {
		t.Error("lost node not repaired by update-status")
	}
	if n := e.slurm.count("scontrol", "update", "partitionname=slurmd", "nodes=slurmd"); n != 1 {
		t.Errorf("%d partition repairs, want 1", n)
	}
}

// TestDepartedStatusShowsTheDrain: relation-departed of a unit whose node runs a job drains
// the node and ends with a status counting it as draining and naming it as being removed.
func TestDepartedStatusShowsTheDrain(t *testing.T) {
	e := newEnv(t)
	in, departed := e.departedWithJob(false) // the controller drains it
	out := e.run(in, departed)
	if e.slurm.count("scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=unit slurmd/1 removed") != 1 {
		t.Errorf("node not drained: %v", e.slurm.commands())
	}
	if !strings.Contains(out.UnitStatus.Message, "1 draining") || !strings.Contains(out.UnitStatus.Message, "removing slurmd-1 once idle") {
		t.Errorf("status %q, want the node counted as draining and named as being removed", out.UnitStatus.Message)
	}
}

// departStorm returns a controller of application slurmd whose units slurmd/1..n have left
// while their drained nodes run a job each, every departure handled already, and the
// departure of one more unit (slurmd/n+1, busy too).
func (e *env) departStorm(n int) (jujutest.State, juju.Event) {
	e.t.Helper()
	units := []string{"slurmd/0"}
	for i := 1; i <= n+1; i++ {
		units = append(units, fmt.Sprintf("slurmd/%d", i))
	}
	in := e.withApp("slurmd", units...)
	for i := 1; i <= n+1; i++ {
		node := fmt.Sprintf("slurmd-%d", i)
		e.slurm.addNode(node, "slurmd", true)
		e.slurm.addJob("slurmd", node)
	}
	for i := 1; i <= n; i++ {
		delete(in.Relations[0].RemoteUnits, fmt.Sprintf("slurmd/%d", i))
		in = e.run(in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", fmt.Sprintf("slurmd/%d", i)))
	}
	last := fmt.Sprintf("slurmd/%d", n+1)
	delete(in.Relations[0].RemoteUnits, last)
	return in, jujutest.RelationHook(juju.RelationDeparted, "slurmd:1", last)
}

// TestDepartureCostDoesNotGrow: a controller hook's Slurm commands do not grow with the
// number of departed units whose nodes still run jobs: the busy ones are found with one node
// list and one squeue, and only the newly departed node is stepped.
func TestDepartureCostDoesNotGrow(t *testing.T) {
	cost := map[int]int{}
	for _, n := range []int{2, 24} {
		e := newEnv(t)
		in, ev := e.departStorm(n)
		before := len(e.slurm.commands())
		out := e.run(in, ev)
		cost[n] = len(e.slurm.commands()) - before
		if got := strings.Count(out.UnitStatus.Message, ","); !strings.Contains(out.UnitStatus.Message, fmt.Sprintf("removing slurmd-[1-%d] once idle", n+1)) {
			t.Errorf("%d busy departures: status %q (%d commas)", n+1, out.UnitStatus.Message, got)
		}
	}
	if cost[24] != cost[2] {
		t.Errorf("Slurm commands of the last departure: %d with 3 busy departed nodes, %d with 25: want the same", cost[2], cost[24])
	}
}

// TestStepsPerPassAreBounded: nodes of departed units that are all idle but not deleted (their
// units could not) are deleted at most maxSteps per pass; every pass deletes more until none
// is left.
func TestStepsPerPassAreBounded(t *testing.T) {
	e := newEnv(t)
	n := 2*maxSteps + 3
	in, ev := e.departStorm(n - 1)
	out := e.run(in, ev)
	e.slurm.EndJobs()
	left := func() int {
		st, _ := e.c.loadState()
		return len(st.Pending)
	}
	for pass := 1; left() > 0; pass++ {
		before := left()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		if deleted := before - left(); deleted == 0 || deleted > maxSteps {
			t.Fatalf("pass %d deleted %d nodes, want 1 to %d", pass, deleted, maxSteps)
		}
		if pass > n {
			t.Fatal("no end")
		}
	}
	for i := 1; i <= n; i++ {
		if e.slurm.hasNode(fmt.Sprintf("slurmd-%d", i)) {
			t.Errorf("slurmd-%d left", i)
		}
	}
}

// TestStepsPerPassHaveATimeBudget: on a slow machine (every Slurm command takes 150 ms of the
// charm's clock) a pass steps nodes only until it has taken passBudget, at least one each
// pass, and the passes still delete every node in the end.
func TestStepsPerPassHaveATimeBudget(t *testing.T) {
	e := newEnv(t)
	n := maxSteps + 2
	in, ev := e.departStorm(n - 1)
	out := e.run(in, ev)
	e.slurm.EndJobs()
	clock := e.withClock()
	var mu sync.Mutex
	e.slurm.Before(func([]string) {
		mu.Lock()
		defer mu.Unlock()
		clock.advance(150 * time.Millisecond)
	})
	left := func() int {
		st, _ := e.c.loadState()
		return len(st.Pending)
	}
	passes := 0
	for left() > 0 {
		before := left()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		passes++
		if deleted := before - left(); deleted == 0 || deleted >= maxSteps {
			t.Fatalf("pass %d deleted %d nodes, want 1 to %d (a budget of %s at 150 ms a command)", passes, deleted, maxSteps-1, passBudget)
		}
		if passes > n {
			t.Fatal("no end")
		}
	}
	for i := 1; i <= n; i++ {
		if e.slurm.hasNode(fmt.Sprintf("slurmd-%d", i)) {
			t.Errorf("slurmd-%d left", i)
		}
	}
}

// TestIdleNodeIsItsUnitsFirst: a departed unit's node that its unit drained and whose last job
// ended less than unitGrace ago is left to the unit (which deletes it within a fraction of a
// second): a pass does not step it; after the grace the controller deletes it. A node the
// controller drained itself (its unit did not) is deleted at once.
func TestIdleNodeIsItsUnitsFirst(t *testing.T) {
	for _, tt := range []struct {
		name        string
		byUnit      bool // the unit drained its node
		after       time.Duration
		wantDeleted bool
	}{
		{"drained by its unit, within the grace", true, 2 * time.Second, false},
		{"drained by its unit, after the grace", true, unitGrace + time.Second, true},
		{"drained by the controller", false, 2 * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			in, departed := e.departedWithJob(tt.byUnit)
			out := e.run(in, departed)
			e.slurm.EndJobs()
			e.c.Clock = func() time.Time { return fakeLastBusy().Add(tt.after) }
			e.run(out, jujutest.Hook(juju.UpdateStatus))
			if deleted := !e.slurm.hasNode("slurmd-1"); deleted != tt.wantDeleted {
				t.Errorf("slurmd-1 deleted: %v, want %v (%v)", deleted, tt.wantDeleted, e.slurm.commands())
			}
		})
	}
}

// TestManyNodesGoneCostOneLogLine: a pass that finds many departed units' nodes gone (their
// units deleted them once their jobs ended) logs them in one line: every juju-log is a tool
// call the hook waits for.
func TestManyNodesGoneCostOneLogLine(t *testing.T) {
	e := newEnv(t)
	in, ev := e.departStorm(23)
	out := e.run(in, ev)
	e.slurm.EndJobs()
	for i := 1; i <= 24; i++ {
		e.slurm.Run(context.Background(), []string{"scontrol", "delete", fmt.Sprintf("nodename=slurmd-%d", i)}, []string{"SLURM_CONF=" + confPath})
	}
	_, calls, err := e.runTools(out, jujutest.Hook(juju.UpdateStatus), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(only(calls, []string{"juju-log"})); n != 1 {
		t.Errorf("%d juju-log calls for 24 nodes gone, want 1: %v", n, calls)
	}
	if st, _ := e.c.loadState(); len(st.Pending) != 0 {
		t.Errorf("pending %v", st.Pending)
	}
}

// TestBusyDepartureReadsNodesOnce: the relation-departed hook of a unit that drained its own
// node, which still runs a job, costs one node list and nothing else in Slurm, however loaded
// the controller: no Step reads the node again, no squeue counts its jobs (they can only
// end; the waiter wakes the charm when they have), and the status uses the same list. Each
// Slurm command took up to 0.6 s while 32 units left at once on a loaded 2-core machine, and
// four of them made the first departure's hook 2.3 s (make bench, part busy). The node is
// still removed once the job ends, after its unit's grace.
func TestBusyDepartureReadsNodesOnce(t *testing.T) {
	e := newEnv(t)
	in, departed := e.departedWithJob(true)
	before := len(e.slurm.commands())
	out := e.run(in, departed)
	var got []string
	for _, c := range e.slurm.commands()[before:] {
		got = append(got, strings.Join(c, " "))
	}
	want := []string{"scontrol show node -o"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Slurm commands of the departure (-want +got):\n%s", d)
	}
	if !strings.Contains(out.UnitStatus.Message, "removing slurmd-1 once idle") {
		t.Errorf("status %q", out.UnitStatus.Message)
	}
	e.slurm.EndJobs()
	e.c.Clock = func() time.Time { return fakeLastBusy().Add(unitGrace + time.Second) }
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if e.slurm.hasNode("slurmd-1") || strings.Contains(out.UnitStatus.Message, "removing") {
		t.Errorf("node not deleted after its job ended and the grace: status %q", out.UnitStatus.Message)
	}
}

// TestDepartureRacingItsUnitsDrain: a departure whose node the hook's list shows not drained
// yet, busy (its unit has not drained it, or is dead): the hook drains it from the list (no
// `scontrol show node` of it), asks Slurm nothing more (no squeue: its jobs can only end),
// and the status counts it draining from the same list, not a new one. Its unit may drain it
// between the list and the drain (here just before): Slurm takes the second drain too. Once
// the job ends, the next pass (the waiter's wake) deletes the node: the controller drained
// it, so it gives no grace to the unit.
func TestDepartureRacingItsUnitsDrain(t *testing.T) {
	for _, unitDrains := range []bool{false, true} {
		e := newEnv(t)
		in, departed := e.departedWithJob(false)
		if unitDrains {
			e.slurm.Before(func(argv []string) {
				if argv[0] == "scontrol" && len(argv) > 1 && argv[1] == "update" {
					e.slurm.Before(nil)
					e.slurm.Cluster.Run(context.Background(), []string{"scontrol", "update", "nodename=slurmd-1", "state=drain", "reason=its unit"}, []string{"SLURM_CONF=" + confPath})
				}
			})
		}
		before := len(e.slurm.commands())
		out, calls, err := e.runTools(in, departed, nil)
		e.slurm.Before(nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range e.slurm.commands()[before:] {
			got = append(got, strings.Join(c, " "))
		}
		want := []string{"scontrol show node -o", "scontrol update nodename=slurmd-1 state=drain reason=unit slurmd/1 removed"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("unit drains %v: Slurm commands of the departure (-want +got):\n%s", unitDrains, d)
		}
		if n := len(only(calls, []string{"juju-log"})); n != 1 {
			t.Errorf("unit drains %v: %d juju-log calls, want 1: %q", unitDrains, n, calls)
		}
		if msg := out.UnitStatus.Message; !strings.Contains(msg, "1 draining") || !strings.Contains(msg, "removing slurmd-1 once idle") {
			t.Errorf("unit drains %v: status %q", unitDrains, msg)
		}
		if !e.slurm.hasNode("slurmd-1") {
			t.Fatalf("unit drains %v: node deleted while its job runs", unitDrains)
		}
		e.slurm.EndJobs()
		out = e.run(out, jujutest.Hook(juju.UpdateStatus))
		if e.slurm.hasNode("slurmd-1") || strings.Contains(out.UnitStatus.Message, "removing") {
			t.Errorf("unit drains %v: node not deleted after its job ended: status %q", unitDrains, out.UnitStatus.Message)
		}
	}
}
