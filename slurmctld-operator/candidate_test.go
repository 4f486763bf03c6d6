package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// TestSlurmRefusesParameters: slurm-conf-parameters that pass the charm's checks but that
// Slurm's parser refuses leave slurm.conf and the running controller as they were, block
// naming the key, and clear once fixed.
func TestSlurmRefusesParameters(t *testing.T) {
	e := newEnv(t)
	out := e.started()
	before := e.read(confPath)
	reconf := e.slurm.count("scontrol", "reconfigure")

	e.slurm.RefuseConfig("MaxJobCount=abc")
	out.Config["slurm-conf-parameters"] = "MaxJobCount=abc"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	// The fake answers with the recorded real refusal (checkconf-refused, which names
	// MaxTime=abc): the status names the option and the key Slurm names.
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.HasPrefix(out.UnitStatus.Message, "slurm-conf-parameters: Slurm refuses MaxTime=abc: ") {
		t.Errorf("status %+v, want blocked naming slurm-conf-parameters and Slurm's key", out.UnitStatus)
	}
	if after := e.read(confPath); after != before {
		t.Errorf("slurm.conf changed although Slurm refused it:\n%s", after)
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != reconf {
		t.Errorf("%d reconfigures after a refused candidate, want none", n-reconf)
	}
	if checked := e.slurm.CheckedConfigs(); len(checked) == 0 || !strings.Contains(checked[len(checked)-1], candidatePrefix) {
		t.Errorf("Slurm's parser read %q, want a candidate directory", checked)
	}
	if left, _ := filepath.Glob(e.c.Path(filepath.Join(confDir, candidatePrefix+"*"))); len(left) > 0 {
		t.Errorf("candidate directories left behind: %v", left)
	}

	// update-status keeps saying so.
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if out.UnitStatus.Code != juju.StatusBlocked {
		t.Errorf("status after update-status %+v, want still blocked", out.UnitStatus)
	}

	// A value Slurm reads is applied with one reconfigure and clears the status.
	e.slurm.RefuseConfig("")
	out.Config["slurm-conf-parameters"] = "MaxJobCount=5000"
	out = e.run(out, jujutest.Hook(juju.ConfigChanged))
	if out.UnitStatus.Code != juju.StatusActive {
		t.Errorf("status %+v after fixing the value", out.UnitStatus)
	}
	if !strings.Contains(e.read(confPath), "MaxJobCount=5000") {
		t.Errorf("fixed value not applied:\n%s", e.read(confPath))
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != reconf+1 {
		t.Errorf("%d reconfigures for the fixed value, want 1", n-reconf)
	}
}

// TestSlurmRefusesPartition: a partition Slurm's parser refuses keeps the previous partition
// file (or adds none for a new application), runs no reconfigure and blocks naming the
// application.
func TestSlurmRefusesPartition(t *testing.T) {
	e := newEnv(t)
	in := e.started()
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", "MaxTime=1:00:00"), "slurmd/0")}
	out := e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	before, conf := e.read(partitionPath("slurmd")), e.read(confPath)
	reconf := e.slurm.count("scontrol", "reconfigure")

	e.slurm.RefuseConfig("MaxTime=2:00:00")
	in = out
	in.Relations = []jujutest.Relation{relation("slurmd:1", "slurmd", compute(t, "slurmd", "MaxTime=2:00:00"), "slurmd/0")}
	out = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "slurmd/0"))
	if out.UnitStatus.Code != juju.StatusBlocked || !strings.HasPrefix(out.UnitStatus.Message, "slurmd application slurmd: partition refused, previous one kept: Slurm refuses") {
		t.Errorf("status %+v, want blocked naming the application", out.UnitStatus)
	}
	if after := e.read(partitionPath("slurmd")); after != before {
		t.Errorf("partition changed although Slurm refused it:\n%s", after)
	}

	// A new application whose partition Slurm refuses gets no include and no file.
	e.slurm.RefuseConfig("MaxTime=3:00")
	in = out
	in.Relations = append(in.Relations, relation("slurmd:2", "gpu", compute(t, "gpu", "MaxTime=3:00"), "gpu/0"))
	out = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "gpu/0"))
	if e.exists(partitionPath("gpu")) || e.read(confPath) != conf {
		t.Errorf("refused new partition written: gpu file exists=%v, slurm.conf:\n%s", e.exists(partitionPath("gpu")), e.read(confPath))
	}
	if n := e.slurm.count("scontrol", "reconfigure"); n != reconf {
		t.Errorf("%d reconfigures after refused partitions, want none", n-reconf)
	}
}

// TestVersionShown: juju status's Version column shows the Slurm version.
func TestVersionShown(t *testing.T) {
	e := newEnv(t)
	if out := e.started(); out.Version != "22.05.8" {
		t.Errorf("application version %q, want 22.05.8", out.Version)
	}
}

// TestPartitionMembershipRepaired: a registered node missing from its NodeSet's partition
// (Slurm bug 16295 after a reconfigure on 22.05) is put back by the next update-status, and
// after the controller's own reconfigures.
func TestPartitionMembershipRepaired(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("slurmd", "slurmd/0", "slurmd/1")
	e.slurm.addNode("slurmd-0", "slurmd", false)
	e.slurm.addNode("slurmd-1", "slurmd", false)
	e.slurm.Lose("slurmd-1")
	out := e.run(in, jujutest.Hook(juju.UpdateStatus))
	if e.slurm.Lost("slurmd-1") || e.slurm.count("scontrol", "update", "partitionname=slurmd", "nodes=slurmd") != 1 {
		t.Errorf("lost node not repaired: lost %v, calls %v", e.slurm.Lost("slurmd-1"), e.slurm.commands())
	}
	// A healthy partition is left alone.
	e.run(out, jujutest.Hook(juju.UpdateStatus))
	if n := e.slurm.count("scontrol", "update", "partitionname=slurmd", "nodes=slurmd"); n != 1 {
		t.Errorf("%d repairs of a healthy partition, want none", n-1)
	}
	// The controller's own reconfigure is followed by a check.
	e.slurm.Lose("slurmd-0")
	out.Config["slurm-conf-parameters"] = "MaxJobCount=5000"
	e.run(out, jujutest.Hook(juju.ConfigChanged))
	if e.slurm.Lost("slurmd-0") {
		t.Errorf("lost node not repaired after the reconfigure")
	}
}

// TestRefusedRemovalKeepsRecord: a partition removal whose candidate Slurm refuses leaves the
// record as it was, order included (the first application holds the default partition).
func TestRefusedRemovalKeepsRecord(t *testing.T) {
	e := newEnv(t)
	in := e.withApp("gpu", "gpu/0")
	in.Relations = append(in.Relations, relation("slurmd:2", "slurmd", compute(t, "slurmd", ""), "slurmd/0"))
	in = e.run(in, jujutest.RelationHook(juju.RelationChanged, "slurmd:2", "slurmd/0"))
	e.slurm.addJob("gpu", "")
	out := e.run(in, jujutest.RelationHook(juju.RelationBroken, "slurmd:1", ""))
	if !e.exists(partitionPath("gpu")) {
		t.Fatalf("partition gpu removed while a job record remains")
	}
	// The jobs go, but Slurm refuses the candidate without gpu's partition.
	e.slurm.EndJobs()
	e.slurm.PurgeJobs()
	e.slurm.RefuseConfig("PartitionName=slurmd")
	checked := len(e.slurm.CheckedConfigs())
	out = e.run(out, jujutest.Hook(juju.UpdateStatus))
	if len(e.slurm.CheckedConfigs()) == checked {
		t.Fatalf("no candidate was made for the removal")
	}
	if !e.exists(partitionPath("gpu")) {
		t.Fatalf("partition gpu removed although Slurm refused the candidate")
	}
	// gpu comes back: it is first again, so it holds the default partition again.
	e.slurm.RefuseConfig("")
	out.Relations = append(out.Relations, relation("slurmd:1", "gpu", compute(t, "gpu", "MaxTime=5"), "gpu/0"))
	e.run(out, jujutest.RelationHook(juju.RelationChanged, "slurmd:1", "gpu/0"))
	if !strings.Contains(e.read(partitionPath("gpu")), "Default=YES") {
		t.Errorf("gpu lost the default partition after a refused removal:\n%s", e.read(partitionPath("gpu")))
	}
}
