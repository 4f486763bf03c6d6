package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// computeGres is compute's databag of app declaring the generic resource names names.
func computeGres(t *testing.T, app string, names ...string) map[string]string {
	t.Helper()
	d, err := slurmd.NewComputeData(app, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.WithGresTypes(names); err != nil {
		t.Fatal(err)
	}
	return d.Encode()
}

// confValue is the value of global key in slurm.conf ("" when absent).
func (e *env) confValue(key string) string {
	e.t.Helper()
	for _, l := range strings.Split(e.read(confPath), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

// publishedGres is the gres_types the controller published on relation i of st.
func publishedGres(t *testing.T, st jujutest.State, i int) []string {
	t.Helper()
	bag, err := slurmd.DecodeControllerBag(st.Relations[i].LocalAppData)
	if err != nil {
		t.Fatal(err)
	}
	return bag.GresTypes
}

// TestGresConfigBeforeFirstStart: the first slurm.conf lists GresTypes=gpu and gres.conf
// (the include of every host's own gres.local.conf) and the controller's empty
// gres.local.conf exist when slurmctld first starts; no restart, and the controller
// publishes gpu as managed.
func TestGresConfigBeforeFirstStart(t *testing.T) {
	e := newEnv(t)
	var atStart map[string]bool
	e.slurm.Before(func(argv []string) {
		// The first ping is the first command after slurmctld's start.
		if atStart == nil && len(argv) > 1 && argv[0] == "scontrol" && argv[1] == "ping" {
			atStart = map[string]bool{}
			for _, p := range []string{gresConfPath, gresLocalPath} {
				atStart[p] = e.exists(p)
			}
			atStart["GresTypes=gpu"] = e.confValue("GresTypes") == "gpu"
		}
	})
	in := e.started()
	want := map[string]bool{gresConfPath: true, gresLocalPath: true, "GresTypes=gpu": true}
	if d := cmp.Diff(want, atStart); d != "" {
		t.Errorf("when slurmctld first answered (-want +got):\n%s", d)
	}
	if d := cmp.Diff(gresConf, e.read(gresConfPath)); d != "" {
		t.Errorf("gres.conf (-want +got):\n%s", d)
	}
	if !strings.Contains(gresConf, "\nInclude /etc/slurm/gres.local.conf\n") {
		t.Errorf("gres.conf has no absolute include:\n%s", gresConf)
	}
	if got := e.read(gresLocalPath); strings.Contains(got, "Name=") {
		t.Errorf("controller's gres.local.conf has lines:\n%s", got)
	}
	if n := e.svc.count("respawn slurmctld"); n != 0 {
		t.Errorf("%d restarts of slurmctld on a fresh controller", n)
	}

	// A CPU-only application declares nothing: no restart, gpu published.
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if d := cmp.Diff([]string{"gpu"}, publishedGres(t, out, 0)); d != "" {
		t.Errorf("published gres_types (-want +got):\n%s", d)
	}
	if n := e.svc.count("respawn slurmctld"); n != 0 {
		t.Errorf("%d restarts of slurmctld for a CPU-only application", n)
	}

	// slurm-conf-parameters cannot set GresTypes.
	out.Config["slurm-conf-parameters"] = "GresTypes=gpu,fpga"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(out.UnitStatus.Message, "GresTypes is managed by the charm") {
		t.Errorf("status %+v, want blocked naming GresTypes", out.UnitStatus)
	}
	if got := e.confValue("GresTypes"); got != "gpu" {
		t.Errorf("GresTypes=%q after a refused slurm-conf-parameters", got)
	}
}

// TestGresDeclaredNameRestartsOnce: a name an application declares is added to GresTypes
// with one slurmctld restart (not a reconfigure: Slurm ignores a GresTypes change on
// reconfigure), and published as managed only once slurmctld answers after it; the same names again, gpu, or a
// second application's known names restart nothing; a name is never removed.
func TestGresDeclaredNameRestartsOnce(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	in.Relations = []jujutest.Relation{
		relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0"),
		relation("slurmd:2", "fpga", nil, "fpga/0"),
	}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	out = e.run(out, jujutest.RelationHook(juju.RelationJoined, "slurmd:2", "fpga/0"))
	reconf := e.slurm.count("scontrol", "reconfigure")

	var restartedWith string
	e.svc.OnStart(func(service.Spec) (bool, error) {
		restartedWith = e.confValue("GresTypes")
		return true, nil
	})
	out.Relations[1].RemoteAppData = computeGres(t, "fpga", "fpga", "bandwidth")
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "fpga/0"))
	if got := e.confValue("GresTypes"); got != "gpu,bandwidth,fpga" {
		t.Errorf("GresTypes=%q, want gpu,bandwidth,fpga", got)
	}
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Fatalf("%d restarts of slurmctld for new names, want 1", n)
	}
	if restartedWith != "gpu,bandwidth,fpga" {
		t.Errorf("slurmctld restarted with GresTypes=%q", restartedWith)
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != reconf {
		t.Errorf("%d reconfigures besides the restart (the new partition is read by the restart)", n-reconf)
	}
	// Published once slurmctld answers after the restart (here the next pass, update-status).
	e.restartUnderWay(out, `apply GresTypes=gpu,bandwidth,fpga (was "gpu")`)
	for i := range out.Relations {
		if d := cmp.Diff([]string{"gpu"}, publishedGres(t, out, i)); d != "" {
			t.Errorf("gres_types published on %s while slurmctld restarts (-want +got):\n%s", out.Relations[i].ID, d)
		}
	}
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v", out.UnitStatus)
	}
	for i := range out.Relations {
		if d := cmp.Diff([]string{"gpu", "bandwidth", "fpga"}, publishedGres(t, out, i)); d != "" {
			t.Errorf("gres_types published on %s (-want +got):\n%s", out.Relations[i].ID, d)
		}
	}

	// The same data again, gpu alone, a subset: nothing restarts.
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "fpga/0"))
	out.Relations[0].RemoteAppData = computeGres(t, "slurmd", "gpu", "fpga")
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	// Declarations dropped: the names stay (removing one would need a restart and strip
	// nodes still registered with it).
	out.Relations[1].RemoteAppData = computeGres(t, "fpga")
	out = e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "fpga/0"))
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts of slurmctld, want still 1", n)
	}
	if got := e.confValue("GresTypes"); got != "gpu,bandwidth,fpga" {
		t.Errorf("GresTypes=%q, want gpu,bandwidth,fpga kept", got)
	}
}

// TestGresRefusedPartitionAddsNoName: when Slurm refuses the partition that comes with a new
// name, neither is kept: no GresTypes change, no restart.
func TestGresRefusedPartitionAddsNoName(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	e.slurm.RefuseConfig("MaxTime=3:00")
	p := compute(t, "fpga", "MaxTime=3:00")
	p["gres_types"] = `["fpga"]`
	in.Relations = []jujutest.Relation{relation("slurmd:1", "fpga", p, "fpga/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "fpga/0"))
	if out.UnitStatus.Code != juju.StatusBlocked {
		t.Errorf("status %+v, want blocked", out.UnitStatus)
	}
	if got := e.confValue("GresTypes"); got != "gpu" {
		t.Errorf("GresTypes=%q after a refused partition", got)
	}
	if n := e.svc.count("respawn slurmctld"); n != 0 {
		t.Errorf("%d restarts", n)
	}
	// A later hook does not bring the refused name back.
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if got := e.confValue("GresTypes"); got != "gpu" || e.svc.count("respawn slurmctld") != 0 {
		t.Errorf("GresTypes=%q, %d restarts after config-changed", got, e.svc.count("respawn slurmctld"))
	}
}

// TestGresUpgradeRestartsOnce: a controller started by a charm that did not manage GresTypes
// (no record of it) is restarted once on upgrade-charm, then publishes gpu.
func TestGresUpgradeRestartsOnce(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", ""), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	// What the previous charm left: no GresTypes, no gres.conf, no record.
	data, err := os.ReadFile(e.c.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	var st charmState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	st.GresRunning = ""
	if data, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.c.StateFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := slurmconf.Edit(context.Background(), e.c.Path(confPath), func(d *slurmconf.Doc) error {
		d.Delete("GresTypes")
		return nil
	}, slurmconf.EditOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{gresConfPath, gresLocalPath} {
		if err := os.Remove(e.c.Path(p)); err != nil {
			t.Fatal(err)
		}
	}
	out = e.run(out, jujutest.Hook(juju.UpgradeCharm))
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts on upgrade-charm, want 1", n)
	}
	if got := e.confValue("GresTypes"); got != "gpu" {
		t.Errorf("GresTypes=%q after upgrade-charm, want gpu", got)
	}
	if !e.exists(gresConfPath) || !e.exists(gresLocalPath) {
		t.Errorf("gres.conf or gres.local.conf not written on upgrade")
	}
	if d := cmp.Diff([]string{"gpu"}, publishedGres(t, out, 0)); d != "" {
		t.Errorf("published gres_types (-want +got):\n%s", d)
	}
	out = e.run(out, jujutest.Hook(juju.UpgradeCharm))
	if n := e.svc.count("respawn slurmctld"); n != 1 {
		t.Errorf("%d restarts after a second upgrade-charm, want 1", n)
	}
	if d := cmp.Diff([]string{"gpu"}, publishedGres(t, out, 0)); d != "" {
		t.Errorf("published gres_types after a second upgrade-charm (-want +got):\n%s", d)
	}
}
