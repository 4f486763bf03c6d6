package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/gres"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// gresLocal is the node-local gres.conf that the controller's gres.conf
// includes by absolute path (see docs/gres.md): Slurm 22.05 serves gres.conf
// to configless slurmds and pushes only relative Include files with it, so
// an absolute Include is read from each node's own disk.
const gresLocal = "/etc/slurm/gres.local.conf"

// gresConf is the controller's gres.conf: written once, never per node.
const gresConf = "# Every node's devices are in its own " + gresLocal + ".\nInclude " + gresLocal + "\n"

// gresCluster starts a cluster whose slurm.conf has GresTypes=gresTypes (none
// when empty) and a gpu partition (NodeSet gpu) beside the base one, and
// whose gres.conf includes gresLocal (empty on the controller). It returns
// the cluster, a context ending with the test (at most 3 minutes) and a
// Slurm client on the controller.
func gresCluster(t *testing.T, gresTypes string) (*cluster, context.Context, *slurm.Client) {
	c := newCluster(t, func(ctl *hosts.Host) []byte {
		conf := baseConf(t, ctl)
		if gresTypes != "" {
			conf = append(conf, "GresTypes="+gresTypes+"\n"...)
		}
		conf = append(conf, "NodeSet=gpu Feature=gpu\nPartitionName=gpu Nodes=gpu MaxTime=INFINITE State=UP\n"...)
		writeFile(t, ctl.Path("/etc/slurm/gres.conf"), []byte(gresConf))
		writeFile(t, ctl.Path(gresLocal), gres.Set(nil).Conf("ctl"))
		return conf
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c, ctx, &slurm.Client{Runner: command.Exec{Command: c.ctl.Command}, Conf: confPath, PollInterval: pollInterval}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startSlurmd configures and starts a dynamic slurmd with conf on h
// through its Pebble.
func (c *cluster) startSlurmd(ctx context.Context, h *hosts.Host, conf string) {
	c.t.Helper()
	svc := c.pebble(h)
	spec := service.Spec{Name: "slurmd", Command: slurmdArgs(h.Name, c.ctl.Addr, conf), KillDelay: 10 * time.Second}
	if err := svc.Configure(ctx, spec); err != nil {
		c.t.Fatal(err)
	}
	if err := svc.Start(ctx, "slurmd"); err != nil {
		c.t.Fatal(err)
	}
}

// addGPUHost adds a compute host with count fake GPUs of model "Tesla T4".
func (c *cluster) addGPUHost(ctx context.Context, name string, count int) *hosts.Host {
	c.t.Helper()
	h := c.addCompute(name)
	if err := h.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: count}); err != nil {
		c.t.Fatal(err)
	}
	return h
}

// detect runs libs/gres detection on h, as the slurmd charm does on its
// machine.
func detect(t *testing.T, ctx context.Context, h *hosts.Host) gres.Detection {
	t.Helper()
	det, err := gres.Detector{Runner: command.Exec{Command: h.Command}, Root: h.ProcPath("/")}.Detect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return det
}

// ctlStdout runs a Slurm client command on the controller host and returns
// its standard output only (srun reports waits on standard error).
func (c *cluster) ctlStdout(ctx context.Context, argv ...string) (string, error) {
	cmd := c.ctl.Command(ctx, argv)
	cmd.Env = append(cmd.Env, "SLURM_CONF="+confPath)
	out, err := cmd.Output()
	return string(out), err
}

// TestGresDynamicNode proves GPUs on a dynamic node against real slurmctld
// and slurmd 22.05: fake GPUs detected with libs/gres, Gres in --conf, the
// node's gres.conf lines in its local file included by the controller's
// gres.conf; the node's first registration already has its GPUs, two jobs
// get one GPU each, a third waits, and a CPU-only node beside it is not
// affected.
func TestGresDynamicNode(t *testing.T) {
	t.Parallel()
	c, ctx, sc := gresCluster(t, "gpu")
	gpu := c.addGPUHost(ctx, "gpu0", 2)
	cpu := c.addCompute("cpu0")

	// Detection, as the slurmd charm runs it on its machine.
	det := detect(t, ctx, gpu)
	want := gres.Set{{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia1"}}}
	if d := cmp.Diff(want, det.Resources()); d != "" || len(det.Notes) > 0 {
		t.Fatalf("detected on gpu0 (-want +got):\n%s\nnotes: %q", d, det.Notes)
	}
	cpuDet := detect(t, ctx, cpu)
	if len(cpuDet.GPUs) != 0 || len(cpuDet.Notes) != 0 {
		t.Fatalf("detected on cpu0: %+v; want nothing", cpuDet)
	}

	// What the charm writes: the local gres.conf (empty of lines on a CPU
	// node, which must still have the file), then slurmd's --conf.
	writeFile(t, gpu.Path(gresLocal), det.Resources().Conf("gpu0"))
	writeFile(t, cpu.Path(gresLocal), cpuDet.Resources().Conf("cpu0"))
	c.startSlurmd(ctx, gpu, "RealMemory=1000 Feature=gpu Gres="+det.Resources().String())
	c.startSlurmd(ctx, cpu, "RealMemory=1000 Feature=base")

	// The very first record of the node already carries its GPUs.
	var first slurm.Node
	waitUntil(t, ctx, "gpu0 registered", func() (bool, string) {
		var err error
		first, err = sc.ShowNode(ctx, "gpu0")
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if g, _ := first.Get("Gres"); g != "gpu:tesla_t4:2" {
		t.Errorf("first record of gpu0: Gres=%s, want gpu:tesla_t4:2", g)
	}
	n := waitNode(t, ctx, sc, "gpu0", func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })
	if g, _ := n.Get("Gres"); g != "gpu:tesla_t4:2" || n.State.Drain() || n.Reason != "" {
		t.Errorf("gpu0 registered: Gres=%s state %v reason %q; want gpu:tesla_t4:2, idle, no reason", g, n.State, n.Reason)
	}
	cn := waitNode(t, ctx, sc, "cpu0", func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })
	if g, _ := cn.Get("Gres"); g != "(null)" || cn.State.Drain() {
		t.Errorf("cpu0 registered: Gres=%s state %v; want (null), idle", g, cn.State)
	}

	// Two jobs asking for one GPU each run at once on different devices; a
	// third waits for a GPU. Each prints CUDA_VISIBLE_DEVICES, then waits
	// for the test to release it.
	release := gpu.Path("/var/lib/juju/release")
	var jobs []*gpuJob
	for i := range 3 {
		j := c.startGPUJob(ctx, fmt.Sprintf("gpujob%d", i))
		jobs = append(jobs, j)
		if i < 2 {
			j.waitDevice(t, ctx)
		}
	}
	devs := []string{jobs[0].device, jobs[1].device}
	slices.Sort(devs)
	if d := cmp.Diff([]string{"0", "1"}, devs); d != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES of two concurrent jobs (-want +got):\n%s", d)
	}
	waitUntil(t, ctx, "gpujob2 pending on Resources", func() (bool, string) {
		out, err := c.onCtl(ctx, "squeue", "-h", "-n", "gpujob2", "-o", "%T %r")
		return err == nil && out == "PENDING Resources", out
	})

	// The CPU-only node beside it runs jobs meanwhile (srun may say it
	// waited a scheduling cycle: the pending GPU job is older).
	if host, err := c.ctlStdout(ctx, "srun", "-p", "base", "-w", "cpu0", "--mem=100", "hostname"); err != nil || host != "cpu0\n" {
		t.Errorf("srun on cpu0 while the GPUs are busy: %q, %v", host, err)
	}
	writeFile(t, release, nil)
	jobs[2].waitDevice(t, ctx)
	for _, j := range jobs {
		if err := j.cmd.Wait(); err != nil {
			t.Errorf("%s: %v", j.name, err)
		}
	}
	if jobs[2].device != "0" && jobs[2].device != "1" {
		t.Errorf("third job: CUDA_VISIBLE_DEVICES=%q", jobs[2].device)
	}

	// A reconfigure (a partition change) re-reads gres.conf, the include
	// from each node's own disk: the GPUs stay. (Once the jobs are gone:
	// a node reconfigured while a job was still completing was seen to stay
	// COMPLETING.)
	waitNode(t, ctx, sc, "gpu0", func(n slurm.Node) bool {
		return n.State.Base == slurm.StateIdle && !n.State.Has(slurm.FlagCompleting)
	})
	if err := sc.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	// slurmd 22.05 logs this line when it (re)reads its configuration: at
	// start and on every reconfigure.
	waitUntil(t, ctx, "slurmd on gpu0 reconfigured", func() (bool, string) {
		return strings.Count(readSlurmdLog(gpu), "CPU frequency setting not configured") >= 2, ""
	})
	n = waitNode(t, ctx, sc, "gpu0", func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle })
	if g, _ := n.Get("Gres"); g != "gpu:tesla_t4:2" || n.State.Drain() {
		t.Errorf("gpu0 after reconfigure: Gres=%s state %v, want gpu:tesla_t4:2 and idle", g, n.State)
	}
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if dev, err := c.ctlStdout(sctx, "srun", "-p", "gpu", "--gres=gpu:2", "--mem=100", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"); err != nil || dev != "0,1\n" {
		node, _ := c.scontrol(ctx, "show", "node", "gpu0")
		part, _ := c.scontrol(ctx, "show", "partition", "gpu")
		q, _ := c.onCtl(ctx, "squeue", "-o", "%i %T %r %b")
		t.Errorf("srun --gres=gpu:2 after reconfigure: %q, %v; want 0,1\nnode: %s\npartition: %s\nqueue: %s", dev, err, node, part, q)
	}
}

// gpuJob is a running `srun --gres=gpu:1` and the device it was given.
type gpuJob struct {
	name   string
	cmd    *exec.Cmd
	lines  chan string
	device string
}

// startGPUJob starts srun on the controller host asking the gpu partition
// for one GPU.
func (c *cluster) startGPUJob(ctx context.Context, name string) *gpuJob {
	c.t.Helper()
	cmd := c.ctl.Command(ctx, []string{"srun", "-p", "gpu", "-J", name, "--gres=gpu:1", "--mem=100", "-n1",
		"sh", "-c", `echo "dev=$CUDA_VISIBLE_DEVICES"; while [ ! -e /var/lib/juju/release ]; do sleep 0.1; done`})
	cmd.Env = append(cmd.Env, "SLURM_CONF="+confPath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	j := &gpuJob{name: name, cmd: cmd, lines: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "dev="); ok {
				j.lines <- v
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	return j
}

// waitDevice waits until the job printed its CUDA_VISIBLE_DEVICES.
func (j *gpuJob) waitDevice(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case j.device = <-j.lines:
	case <-ctx.Done():
		t.Fatalf("%s: no CUDA_VISIBLE_DEVICES printed: %v", j.name, ctx.Err())
	}
}

// TestGresTypesNeedRestart proves the ways a GPU node registers without its
// GPUs on Slurm 22.05, which the operators must avoid: GresTypes missing when
// slurmctld started (Gres=(null), silently), GresTypes added by a
// reconfigure (ignored until slurmctld restarts, and the node's record keeps
// Gres=(null) until it is deleted and registers again), and gres.conf lines
// that do not reach the node (drained: count reported lower than
// configured).
func TestGresTypesNeedRestart(t *testing.T) {
	t.Parallel()
	c, ctx, sc := gresCluster(t, "")
	res := gres.Set{{Name: "gpu", Type: "tesla_t4", Count: 2, Files: []string{"/dev/nvidia0", "/dev/nvidia1"}}}
	conf := "RealMemory=1000 Feature=gpu Gres=" + res.String()
	gpuNode := func(name, linesFor string) *hosts.Host {
		h := c.addGPUHost(ctx, name, 2)
		writeFile(t, h.Path(gresLocal), res.Conf(linesFor))
		c.startSlurmd(ctx, h, conf)
		return h
	}
	gresOf := func(n slurm.Node) string { g, _ := n.Get("Gres"); return g }
	idle := func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle }

	// No GresTypes when slurmctld started: the GPUs vanish without a word.
	g1 := gpuNode("gpu1", "gpu1")
	if n := waitNode(t, ctx, sc, "gpu1", idle); gresOf(n) != "(null)" || n.State.Drain() {
		t.Errorf("gpu1 without GresTypes: Gres=%s state %v, want (null) and idle", gresOf(n), n.State)
	}

	// GresTypes added by a reconfigure is ignored, by slurmctld and slurmd.
	old, err := os.ReadFile(c.ctl.Path(confPath))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, c.ctl.Path(confPath), append(old, "GresTypes=gpu\n"...))
	if err := sc.Reconfigure(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "slurmctld ignoring the new GresTypes", func() (bool, string) {
		return strings.Contains(c.ctlLog(), "GresPlugins changed from (null) to gpu ignored"), ""
	})
	g1svc := c.pebble(g1)
	if err := g1svc.Restart(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "slurmctld refusing gpu1's GRES", func() (bool, string) {
		return strings.Contains(c.ctlLog(), "No plugin configured to process GRES data from node gpu1"), ""
	})
	if n, err := sc.ShowNode(ctx, "gpu1"); err != nil || gresOf(n) != "(null)" {
		t.Errorf("gpu1 after reconfigure and slurmd restart: Gres=%s, %v; want (null)", gresOf(n), err)
	}

	// A slurmctld restart loads gres/gpu, but the node's record (restored
	// from saved state) keeps Gres=(null) even when its slurmd restarts...
	if err := c.pebble(c.ctl).Restart(ctx, "slurmctld"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "slurmctld UP", func() (bool, string) {
		out, err := c.scontrol(ctx, "ping")
		return err == nil && strings.Contains(out, "is UP"), out
	})
	if err := g1svc.Restart(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "gpu1 registered again", func() (bool, string) {
		return strings.Count(readSlurmdLog(g1), "slurmd started on") >= 3, ""
	})
	if n := waitNode(t, ctx, sc, "gpu1", idle); gresOf(n) != "(null)" {
		t.Errorf("gpu1 after slurmctld and slurmd restarts: Gres=%s, want (null) (record kept)", gresOf(n))
	}
	// ... until it is deleted and registers afresh.
	if err := g1svc.Stop(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if err := sc.DeleteNode(ctx, "gpu1"); err != nil {
		t.Fatal(err)
	}
	if err := g1svc.Start(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if n := waitNode(t, ctx, sc, "gpu1", idle); gresOf(n) != "gpu:tesla_t4:2" || n.State.Drain() {
		t.Errorf("gpu1 re-registered: Gres=%s state %v, want gpu:tesla_t4:2 and idle", gresOf(n), n.State)
	}

	// gres.conf lines naming another node do not apply: the GPUs have no
	// File and the node is drained as invalid.
	gpuNode("gpu2", "gpu-other")
	n := waitNode(t, ctx, sc, "gpu2", func(n slurm.Node) bool { return n.State.Drain() })
	if want := "gres/gpu count reported lower than configured (0 < 2)"; n.Reason != want {
		t.Errorf("gpu2 with another node's lines: reason %q, want %q", n.Reason, want)
	}
}

// pebble returns the service manager of h's Pebble.
func (c *cluster) pebble(h *hosts.Host) service.Manager {
	c.t.Helper()
	m, err := pebble.New(h.PebbleSocket())
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

func readSlurmdLog(h *hosts.Host) string {
	data, _ := os.ReadFile(h.Path("/var/log/slurm/slurmd.log"))
	return string(data)
}

// TestGresDeviceRemoved proves the path for a node whose GPUs changed (one
// removed): re-detection gives the new set, and the node re-registers with
// it through drain, wait for its job, stop, delete and start with the new
// --conf and gres.conf lines; never while a job runs on it.
func TestGresDeviceRemoved(t *testing.T) {
	t.Parallel()
	c, ctx, sc := gresCluster(t, "gpu")
	gpu := c.addGPUHost(ctx, "gpu0", 2)
	register := func() gres.Set {
		t.Helper()
		det := detect(t, ctx, gpu)
		writeFile(t, gpu.Path(gresLocal), det.Resources().Conf("gpu0"))
		c.startSlurmd(ctx, gpu, "RealMemory=1000 Feature=gpu Gres="+det.Resources().String())
		return det.Resources()
	}
	idle := func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle }
	if res := register(); res.String() != "gpu:tesla_t4:2" {
		t.Fatalf("detected %q, want gpu:tesla_t4:2", res)
	}
	waitNode(t, ctx, sc, "gpu0", idle)

	job := c.startGPUJob(ctx, "running")
	job.waitDevice(t, ctx)
	if err := gpu.RemoveFakeGPU(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// The node-config path: drain, wait for the job, stop, delete, start.
	if err := sc.Drain(ctx, "gpu0", "devices changed: re-registering"); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- sc.WaitDrained(ctx, "gpu0") }()
	select {
	case err := <-drained:
		t.Fatalf("WaitDrained returned while a GPU job runs: %v", err)
	default:
	}
	writeFile(t, gpu.Path("/var/lib/juju/release"), nil)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if err := job.cmd.Wait(); err != nil {
		t.Errorf("job: %v", err)
	}
	if err := c.pebble(gpu).Stop(ctx, "slurmd"); err != nil {
		t.Fatal(err)
	}
	if err := sc.DeleteNode(ctx, "gpu0"); err != nil {
		t.Fatal(err)
	}
	if res := register(); res.String() != "gpu:tesla_t4:1" {
		t.Fatalf("re-detected %q, want gpu:tesla_t4:1", res)
	}
	n := waitNode(t, ctx, sc, "gpu0", idle)
	if g, _ := n.Get("Gres"); g != "gpu:tesla_t4:1" || n.State.Drain() {
		t.Errorf("gpu0 re-registered: Gres=%s state %v, want gpu:tesla_t4:1 and idle", g, n.State)
	}
	if dev, err := c.ctlStdout(ctx, "srun", "-p", "gpu", "--gres=gpu:1", "--mem=100", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"); err != nil || dev != "0\n" {
		t.Errorf("srun --gres=gpu:1 after re-registration: %q, %v; want 0", dev, err)
	}
	if out, err := c.onCtl(ctx, "sbatch", "-p", "gpu", "--gres=gpu:2", "--wrap", "true"); err == nil {
		t.Errorf("sbatch --gres=gpu:2 on a 1-GPU node accepted: %s", out)
	}
}

// TestGresVariants proves the other shapes the charm may write: gres.conf
// lines without NodeName (the file is the node's own), a Gres= lower than
// the lines (node-config lowering the count: Slurm keeps the first files),
// and untyped GPUs when nvidia-smi is missing (device files only).
func TestGresVariants(t *testing.T) {
	t.Parallel()
	c, ctx, sc := gresCluster(t, "gpu")
	idle := func(n slurm.Node) bool { return n.State.Base == slurm.StateIdle }

	lowered := c.addGPUHost(ctx, "gpua", 2)
	res := detect(t, ctx, lowered).Resources()
	writeFile(t, lowered.Path(gresLocal), res.Conf(""))
	c.startSlurmd(ctx, lowered, "RealMemory=1000 Feature=gpu Gres=gpu:tesla_t4:1")

	untyped := c.addCompute("gpub")
	if err := untyped.AddFakeGPUs(ctx, hosts.FakeGPUs{Model: "Tesla T4", Count: 2, NoSMI: true}); err != nil {
		t.Fatal(err)
	}
	det := detect(t, ctx, untyped)
	if got := det.Resources().String(); got != "gpu:2" || len(det.Notes) != 1 {
		t.Fatalf("detected without nvidia-smi: %q, notes %q; want gpu:2 and a note", got, det.Notes)
	}
	writeFile(t, untyped.Path(gresLocal), det.Resources().Conf("gpub"))
	c.startSlurmd(ctx, untyped, "RealMemory=1000 Feature=gpu Gres="+det.Resources().String())

	for node, want := range map[string]struct{ gres, gpus, devices string }{
		"gpua": {"gpu:tesla_t4:1", "1", "0\n"},
		"gpub": {"gpu:2", "2", "0,1\n"},
	} {
		n := waitNode(t, ctx, sc, node, idle)
		if g, _ := n.Get("Gres"); g != want.gres || n.State.Drain() {
			t.Errorf("%s: Gres=%s state %v, want %s and idle", node, g, n.State, want.gres)
		}
		dev, err := c.ctlStdout(ctx, "srun", "-p", "gpu", "-w", node, "--gres=gpu:"+want.gpus, "--mem=100", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
		if err != nil || dev != want.devices {
			t.Errorf("%s: srun --gres=gpu:%s sees %q, %v; want %q", node, want.gpus, dev, err, want.devices)
		}
	}
}
