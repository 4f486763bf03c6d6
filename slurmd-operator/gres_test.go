package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// t4 is a detected pair of Tesla T4s.
var t4 = gres.Set{{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia1"}}}

// gpuRunner answers nvidia-smi as a machine with GPUs would (csv, its CSV lines; empty:
// nvidia-smi is not installed) and passes every other command on.
type gpuRunner struct {
	*host
	mu    sync.Mutex
	csv   string
	calls int
}

func (r *gpuRunner) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	if argv[0] != "nvidia-smi" {
		return r.host.Run(ctx, argv, env)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if !slices.Equal(argv, gres.NvidiaSMIQuery()) {
		return command.Output{Stderr: []byte("unexpected query"), ExitCode: 2}, nil
	}
	if r.csv == "" {
		return command.Output{}, &os.PathError{Op: "exec", Path: "nvidia-smi", Err: os.ErrNotExist}
	}
	return command.Output{Stdout: []byte(r.csv)}, nil
}

func (r *gpuRunner) setCSV(csv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.csv = csv
}

const t4CSV = "0, Tesla T4, GPU-aaaa\n1, Tesla T4, GPU-bbbb\n"

// withGPUs gives the env's machine n fake GPU device files (links to /dev/null, a character
// device) and an nvidia-smi answering csv.
func (e *env) withGPUs(n int, csv string) *gpuRunner {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Join(e.root, "dev"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	for i := range n {
		if err := os.Symlink("/dev/null", filepath.Join(e.root, "dev", "nvidia"+string(rune('0'+i)))); err != nil {
			e.t.Fatal(err)
		}
	}
	r := &gpuRunner{host: e.slurm, csv: csv}
	e.charm.Slurm = r
	return r
}

// installedGPUNode is a unit whose machine has two Tesla T4s, installed with
// generic-resources declared (when not empty).
func installedGPUNode(t *testing.T, declared string) (*env, *gpuRunner) {
	t.Helper()
	e := newEnv(t)
	r := e.withGPUs(2, t4CSV)
	if declared != "" {
		e.state.Config["generic-resources"] = declared
	}
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	return e, r
}

// joinManaging joins a controller that manages the GRES names managed.
func (e *env) joinManaging(managed ...string) {
	e.t.Helper()
	e.relatedGres(managed...)
	e.joinHooks()
}

// relatedGres is related with a controller that manages the GRES names managed.
func (e *env) relatedGres(managed ...string) {
	e.t.Helper()
	e.related()
	bag, err := slurmd.ControllerBag{Controllers: []string{"10.0.0.1:6817"}, AuthSecretID: string(secretID), ClusterName: "test", GresTypes: managed}.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	e.state.Relations[0].RemoteAppData = bag
}

// slurmdConf is the --conf of the slurmd service as configured ("" when none).
func (e *env) slurmdConf() string {
	cmd := e.svc.Command(SlurmdService)
	if i := slices.Index(cmd, "--conf"); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return ""
}

func (e *env) gresLocal() string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, GresLocalConf))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

// detectGres runs the detect-gres action.
func (e *env) detectGres(params map[string]any) jujutest.ActionState {
	e.t.Helper()
	return e.runAction("detect-gres", params)
}

// TestGPUNodeJoinsWithItsGPUs: install detects two T4s and writes their gres.conf lines
// before any slurmd runs; the node's first --conf carries Gres=gpu:tesla_t4:2 and the status
// names them.
func TestGPUNodeJoinsWithItsGPUs(t *testing.T) {
	e, _ := installedGPUNode(t, "")
	want := "# Generic resources of this node, written by the slurmd charm.\n" +
		"NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia0\n" +
		"NodeName=slurmd-3 Name=gpu Type=tesla_t4 File=/dev/nvidia1\n"
	if d := cmp.Diff(want, e.gresLocal()); d != "" {
		t.Errorf("gres.local.conf after install (-want +got):\n%s", d)
	}
	e.joinManaging("gpu")
	if conf := e.slurmdConf(); !strings.Contains(conf, " Gres=gpu:tesla_t4:2 ") {
		t.Errorf("first --conf %q has no Gres=gpu:tesla_t4:2", conf)
	}
	if got := e.svcCalls(SlurmdService); slices.Contains(got, "respawn") {
		t.Errorf("slurmd restarted on its first start: %q", got)
	}
	if d := cmp.Diff(active("node slurmd-3 idle, 2× gpu:tesla_t4"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// TestCPUNodeGetsAnEmptyGresConf: a machine without GPUs has the file (the controller's
// gres.conf includes it) with no line, and no Gres= in its --conf.
func TestCPUNodeGetsAnEmptyGresConf(t *testing.T) {
	e := newEnv(t)
	if err := e.run(jujutest.Hook(juju.Install)); err != nil {
		t.Fatal(err)
	}
	if got := e.gresLocal(); strings.Contains(got, "Name=") {
		t.Errorf("CPU node's gres.local.conf has lines:\n%s", got)
	}
	e.joinManaging("gpu")
	if conf := e.slurmdConf(); strings.Contains(conf, "Gres") {
		t.Errorf("CPU node's --conf %q has Gres", conf)
	}
	if d := cmp.Diff(active("node slurmd-3 idle"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// TestUnmanagedGresWaits: a node with a resource the controller does not manage does not
// start slurmd (it would register without it for good); it starts once the controller
// publishes the name.
func TestUnmanagedGresWaits(t *testing.T) {
	e, _ := installedGPUNode(t, "Name=bandwidth Count=20G")
	e.joinManaging("gpu")
	if d := cmp.Diff(juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld to manage GRES bandwidth"}, e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if e.slurm.hasNode(node) || e.svc.Active(SlurmdService) {
		t.Fatalf("slurmd started with an unmanaged GRES")
	}
	// update-status keeps saying why.
	if err := e.run(jujutest.Hook(juju.UpdateStatus)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(juju.WorkloadStatus{Code: juju.StatusWaiting, Message: "waiting for slurmctld to manage GRES bandwidth"}, e.status()); d != "" {
		t.Errorf("status after update-status (-want +got):\n%s", d)
	}
	// The leader declares the name to the controller.
	var pub map[string]string
	for _, r := range e.state.Relations {
		pub = r.LocalAppData
	}
	if got := pub["gres_types"]; got != `["bandwidth"]` {
		t.Errorf("published gres_types %q, want [\"bandwidth\"]", got)
	}

	e.relatedGres("gpu", "bandwidth")
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if conf := e.slurmdConf(); !strings.Contains(conf, " Gres=gpu:tesla_t4:2,bandwidth:20G ") {
		t.Errorf("--conf %q", conf)
	}
	if d := cmp.Diff(active("node slurmd-3 idle, 2× gpu:tesla_t4, 20G× bandwidth"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// TestBadGenericResourcesBlocks: an invalid generic-resources blocks naming the entry and
// leaves the running node as it was.
func TestBadGenericResourcesBlocks(t *testing.T) {
	e, _ := installedGPUNode(t, "Name=bandwidth Count=20G")
	e.joinManaging("gpu", "bandwidth")
	conf, lines := e.slurmdConf(), e.gresLocal()
	if !strings.Contains(conf, "Gres=gpu:tesla_t4:2,bandwidth:20G") {
		t.Fatalf("--conf %q", conf)
	}
	calls := len(e.svcCalls(SlurmdService))
	e.state.Config["generic-resources"] = "Name=fpga NodeName=x File=/dev/x0"
	if err := e.run(jujutest.Hook(juju.ConfigChanged)); err != nil {
		t.Fatal(err)
	}
	if e.state.UnitStatus.Code != juju.StatusBlocked || !strings.Contains(e.state.UnitStatus.Message, `generic-resources: invalid generic resource "Name=fpga NodeName=x File=/dev/x0"`) {
		t.Errorf("status %+v, want blocked naming the entry", e.state.UnitStatus)
	}
	if err := e.run(jujutest.RelationHook(juju.RelationChanged, relID, "slurmctld/0")); err != nil {
		t.Fatal(err)
	}
	if e.slurmdConf() != conf || e.gresLocal() != lines || len(e.svcCalls(SlurmdService)) != calls {
		t.Errorf("node changed under a bad generic-resources: --conf %q, lines %q", e.slurmdConf(), e.gresLocal())
	}
}

// TestDetectGresReRegisters: a GPU removed is found by detect-gres (dry-run only reports);
// the node re-registers with one GPU through the transactional path (its record deleted and
// created again), its lines rewritten.
func TestDetectGresReRegisters(t *testing.T) {
	e, r := installedGPUNode(t, "")
	e.joinManaging("gpu")

	a := e.detectGres(map[string]any{"dry-run": true})
	if a.Results["result"] != "dry run: nothing changed" || a.Results["detected"] != "gpu:tesla_t4:2" {
		t.Errorf("dry run with the same GPUs: %v", a.Results)
	}
	if err := os.Remove(filepath.Join(e.root, "dev", "nvidia1")); err != nil {
		t.Fatal(err)
	}
	r.setCSV("0, Tesla T4, GPU-aaaa\n")
	a = e.detectGres(map[string]any{"dry-run": true})
	if a.Results["result"] != "dry run: the node would re-register" || a.Results["gres"] != "gpu:tesla_t4:1" || a.Results["running"] != "gpu:tesla_t4:2" {
		t.Errorf("dry run with a GPU gone: %v", a.Results)
	}
	if !strings.Contains(e.slurmdConf(), "Gres=gpu:tesla_t4:2") || len(e.slurmCalls()) != 0 {
		t.Fatalf("dry run changed the node: --conf %q, calls %q", e.slurmdConf(), e.slurmCalls())
	}

	a = e.detectGres(map[string]any{})
	if a.Failed || a.Results["result"] != "re-registered" || a.Results["running"] != "gpu:tesla_t4:1" {
		t.Errorf("detect-gres: failed %v (%s), results %v", a.Failed, a.Message, a.Results)
	}
	if !strings.Contains(e.slurmdConf(), " Gres=gpu:tesla_t4:1 ") {
		t.Errorf("--conf %q", e.slurmdConf())
	}
	if !slices.Contains(e.slurmCalls(), "scontrol delete nodename="+node) {
		t.Errorf("node not re-registered (deleted, then started): %q", e.slurmCalls())
	}
	if strings.Contains(e.gresLocal(), "nvidia1") {
		t.Errorf("lines of the removed GPU kept:\n%s", e.gresLocal())
	}
	if d := cmp.Diff(active("node slurmd-3 idle, 1× gpu:tesla_t4"), e.status()); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	a = e.detectGres(map[string]any{})
	if a.Results["result"] != "unchanged" {
		t.Errorf("second detect-gres: %v", a.Results)
	}
}

// TestNodeConfigGres: node-config's Gres= lowers the count (the lines stay: Slurm keeps the
// first) and Gres="" removes the resources from the --conf; reset returns to detection.
func TestNodeConfigGres(t *testing.T) {
	e, _ := installedGPUNode(t, "")
	e.joinManaging("gpu")
	lines := e.gresLocal()
	for _, tt := range []struct {
		params map[string]any
		want   string
		status string
	}{
		{map[string]any{"parameters": "Gres=gpu:tesla_t4:1"}, "Gres=gpu:tesla_t4:1", "node slurmd-3 idle, 1× gpu:tesla_t4"},
		{map[string]any{"parameters": `Gres=""`}, "", "node slurmd-3 idle"},
		{map[string]any{"reset": true}, "Gres=gpu:tesla_t4:2", "node slurmd-3 idle, 2× gpu:tesla_t4"},
	} {
		a := e.action(tt.params)
		if a.Failed {
			t.Fatalf("node-config %v: %s", tt.params, a.Message)
		}
		conf := e.slurmdConf()
		if tt.want == "" && strings.Contains(conf, "Gres") || tt.want != "" && !strings.Contains(conf, " "+tt.want+" ") {
			t.Errorf("node-config %v: --conf %q, want %q", tt.params, conf, tt.want)
		}
		if e.gresLocal() != lines {
			t.Errorf("node-config %v changed the gres.conf lines:\n%s", tt.params, e.gresLocal())
		}
		if d := cmp.Diff(active(tt.status), e.status()); d != "" {
			t.Errorf("node-config %v: status (-want +got):\n%s", tt.params, d)
		}
	}
}

// TestUpgradeKeepsCPUNodes: a node started by a charm that wrote no gres.conf gets the file
// on upgrade-charm and is not re-registered when it has no resource.
func TestUpgradeKeepsCPUNodes(t *testing.T) {
	e := newEnv(t)
	e.join()
	st := e.savedState()
	st.Applied.GresConf, st.Gres = "", nil
	e.saveState(st)
	if err := os.Remove(filepath.Join(e.root, GresLocalConf)); err != nil {
		t.Fatal(err)
	}
	calls := len(e.slurmCalls())
	if err := e.run(jujutest.Hook(juju.UpgradeCharm)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.gresLocal(), "Name=") {
		t.Errorf("lines on a CPU node: %s", e.gresLocal())
	}
	if got := e.slurmCalls()[calls:]; len(got) != 0 {
		t.Errorf("upgrade-charm re-registered a CPU node: %q", got)
	}
}

// TestGenericResourcesChangeReRegisters: a new generic-resources on a running node
// re-registers it on config-changed (after the controller manages the name).
func TestGenericResourcesChangeReRegisters(t *testing.T) {
	e, _ := installedGPUNode(t, "")
	e.joinManaging("gpu", "fpga")
	if err := os.WriteFile(filepath.Join(e.root, "dev", "xclmgmt0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.state.Config["generic-resources"] = "Name=fpga Type=u250 File=/dev/xclmgmt0"
	if err := e.run(jujutest.Hook(juju.ConfigChanged)); err != nil {
		t.Fatal(err)
	}
	if conf := e.slurmdConf(); !strings.Contains(conf, " Gres=gpu:tesla_t4:2,fpga:u250:1 ") {
		t.Errorf("--conf %q after config-changed", conf)
	}
	if !strings.Contains(e.gresLocal(), "NodeName=slurmd-3 Name=fpga Type=u250 File=/dev/xclmgmt0\n") {
		t.Errorf("lines:\n%s", e.gresLocal())
	}
	if !slices.Contains(e.slurmCalls(), "scontrol delete nodename="+node) {
		t.Errorf("node not re-registered: %q", e.slurmCalls())
	}
	// The same configuration again: nothing more.
	n := len(e.slurmCalls())
	if err := e.run(jujutest.Hook(juju.ConfigChanged)); err != nil {
		t.Fatal(err)
	}
	if got := e.slurmCalls()[n:]; len(got) != 0 {
		t.Errorf("unchanged config-changed ran %q", got)
	}
}

// TestNodeConfigUnmanagedGres: a node-config Gres= naming a resource the controller does not
// manage is refused with nothing changed (the node would register without it for good), applied
// now or staged for the next reboot.
func TestNodeConfigUnmanagedGres(t *testing.T) {
	e, _ := installedGPUNode(t, "")
	e.joinManaging("gpu")
	for _, params := range []map[string]any{
		{"parameters": "Gres=gpu:tesla_t4:1,fpga:1"},
		{"parameters": "Gres=fpga:1", "on-reboot": true},
	} {
		before := e.savedState()
		calls := len(e.slurmCalls())
		a := e.action(params)
		want := "parameters: Gres names fpga, which slurmctld does not manage (GresTypes=gpu)"
		if !a.Failed || !strings.HasPrefix(a.Message, want) {
			t.Errorf("node-config %v: failed=%v %q, want %q", params, a.Failed, a.Message, want)
		}
		if got := e.slurmCalls()[calls:]; len(got) != 0 {
			t.Errorf("node-config %v touched the node: %q", params, got)
		}
		e.stateUnchanged(before)
	}
}
