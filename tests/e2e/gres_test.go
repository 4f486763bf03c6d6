package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

// GPUs on dynamic nodes through the operators (docs/gres.md): a unit of application "gpu"
// gets two fake Tesla T4s (tests/hosts: device files bound from /dev/null, a stub nvidia-smi)
// before its install hook; a CPU-only application "cpu" runs beside it.

func TestGres(t *testing.T) {
	t.Parallel()
	gresScenario(t, "")
}

// TestGresMachines is TestGres on Debian 13 and 14 machines (Slurm 24.11 and 26.05, systemd),
// the fake GPUs mounted inside each machine's own /dev. On the CPU-only application's machine
// slurmd's own GPU detection would find two GPUs (Slurm's fake_gpus.conf): Slurm 26.05's
// slurmd -Z detects GPUs by itself, and the charms' detection and node-config must stay the
// one source of a node's GRES: the CPU-only node registers none (no phantom GPUs), the GPU
// node its own two, in its first record, as on 24.11.
func TestGresMachines(t *testing.T) {
	t.Parallel()
	onReleases(t, []release{trixie, forky}, func(t *testing.T, r release) {
		gresScenario(t, r.base)
	})
}

// gpuMachines gives the machines of the applications in gpus fake GPUs before their units'
// install hook, and the machines (not Pebble hosts) of the applications in slurmSees that many
// GPUs only Slurm's own detection sees.
type gpuMachines struct {
	*model.BaseMachines
	gpus      map[string]hosts.FakeGPUs
	slurmSees map[string]int
}

func (p *gpuMachines) NewMachine(ctx context.Context, id, unit string) (model.Machine, error) {
	return p.NewMachineBase(ctx, id, unit, "")
}

func (p *gpuMachines) NewMachineBase(ctx context.Context, id, unit, base string) (model.Machine, error) {
	m, err := p.BaseMachines.NewMachineBase(ctx, id, unit, base)
	if err != nil {
		return nil, err
	}
	app, _, _ := strings.Cut(unit, "/")
	if mach := p.Network.Machine(m.Hostname()); mach != nil && p.slurmSees[app] > 0 {
		if err := slurmSeesGPUs(mach, p.slurmSees[app]); err != nil {
			return nil, fmt.Errorf("cannot give %s GPUs for Slurm's detection: %w", unit, err)
		}
	}
	g, ok := p.gpus[app]
	if !ok {
		return m, nil
	}
	if h := p.Network.Host(m.Hostname()); h != nil {
		err = h.AddFakeGPUs(ctx, g)
	} else if mach := p.Network.Machine(m.Hostname()); mach != nil {
		err = mach.AddFakeGPUs(ctx, g)
	} else {
		err = fmt.Errorf("no host or machine %q", m.Hostname())
	}
	if err != nil {
		return nil, fmt.Errorf("cannot give %s fake GPUs: %w", unit, err)
	}
	return m, nil
}

// slurmSeesGPUs makes slurmd's own GPU detection (Slurm 26.05's on dynamic nodes, unless
// gres.conf says AutoDetect=off) find n Tesla T4s on mach, through fake_gpus.conf: the hook
// of Slurm's own test suite, beside slurm.conf (for a configless slurmd, in its cache).
// Nothing else of the machine sees them. Every GPU plugin reads the file first, gpu/generic
// of AutoDetect=off too, so on a machine with gres.conf lines of its own it also changes them
// (their cores: Gres=gpu:tesla_t4:2(S:0)), which no real machine's AutoDetect=off does: it is
// for machines that the charm finds without GPUs.
func slurmSeesGPUs(mach *hosts.Machine, n int) error {
	dir := mach.Path(slurmdConfCache)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "fake_gpus.conf"), fakeGPUsConf(n), 0o644)
}

// slurmdConfCache is where a configless slurmd keeps the files it fetched (SlurmdSpoolDir's
// conf-cache), and reads fake_gpus.conf.
const slurmdConfCache = "/var/spool/slurmd/conf-cache"

// fakeGPUsConf is a fake_gpus.conf of n Tesla T4s, each bound to every CPU of the machine:
// <type>|<cpu count>|<cpu range>|<links>|<device file>|<unique id>|<flags>.
func fakeGPUsConf(n int) []byte {
	cpus := runtime.NumCPU()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "tesla_t4|%d|0-%d|(null)|/dev/nvidia%d|(null)|nvidia_gpu_env\n", cpus, cpus-1, i)
	}
	return []byte(b.String())
}

func gresScenario(t *testing.T, base string) {
	c := newClusterWith(t, base, func(bm *model.BaseMachines) model.Provisioner {
		return &gpuMachines{BaseMachines: bm, gpus: map[string]hosts.FakeGPUs{"gpu": {Model: "Tesla T4", Count: 2}}, slurmSees: map[string]int{"cpu": 2}}
	}, 0)

	// Every record the controller shows of gpu-0, from before the unit exists: the first
	// one must already carry the GPUs.
	first := c.watchGres("gpu-0")
	c.deploy(slurmdPath, "cpu", 1, nil)
	c.deploy(slurmdPath, "gpu", 1, nil)
	c.integrate("slurmctld", "cpu")
	c.integrate("slurmctld", "gpu")
	c.waitActive()
	if seen := first(); len(seen) == 0 || seen[0] != "gpu:tesla_t4:2" || slices.ContainsFunc(seen, func(g string) bool { return g != "gpu:tesla_t4:2" }) {
		t.Errorf("Gres of gpu-0's records, first to last: %q; want only gpu:tesla_t4:2", seen)
	}
	if got := c.exec("gpu/0", "cat", "/etc/slurm/gres.local.conf"); !strings.Contains(got, "NodeName=gpu-0 Name=gpu Type=tesla_t4 File=/dev/nvidia1\n") {
		t.Errorf("gpu/0's gres.local.conf:\n%s", got)
	}
	if got := c.slurm("scontrol", "show", "config"); !regexp.MustCompile(`(?m)^GresTypes\s*= gpu$`).MatchString(got) {
		t.Errorf("slurmctld's GresTypes is not gpu:\n%s", got)
	}
	c.eventually(30*time.Second, "gpu/0 status naming its GPUs", func() (bool, string) {
		_, msg := c.unitStatus("gpu/0")
		return msg == "node gpu-0 idle, 2× gpu:tesla_t4", msg
	})
	if n := c.slurm("scontrol", "show", "node", "-o", "cpu-0"); field(n, "Gres") != "(null)" {
		t.Errorf("cpu-0: Gres=%s, want (null)", field(n, "Gres"))
	}

	// Two jobs of one GPU each run at once on different devices; a third waits.
	var jobs []*e2eGPUJob
	for i := range 3 {
		j := c.startGPUJob(fmt.Sprintf("gpujob%d", i))
		jobs = append(jobs, j)
		if i < 2 {
			j.waitDevice(t)
		}
	}
	devs := []string{jobs[0].device, jobs[1].device}
	slices.Sort(devs)
	if d := cmp.Diff([]string{"0", "1"}, devs); d != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES of two concurrent jobs (-want +got):\n%s", d)
	}
	c.eventually(30*time.Second, "gpujob2 pending on Resources", func() (bool, string) {
		out := strings.TrimSpace(c.slurm("squeue", "-h", "-n", "gpujob2", "-o", "%T %r"))
		return out == "PENDING Resources", out
	})
	// The CPU-only application beside it is unaffected.
	if host := strings.TrimSpace(c.slurm("srun", "-p", "cpu", "--mem=100", "hostname")); host == "" {
		t.Errorf("srun on the cpu partition while the GPUs are busy printed nothing")
	}
	c.exec("gpu/0", "touch", "/var/lib/juju/release")
	jobs[2].waitDevice(t)
	for _, j := range jobs {
		if err := j.wait(); err != nil {
			t.Errorf("%s: %v", j.name, err)
		}
	}
	c.exec("gpu/0", "rm", "-f", "/var/lib/juju/release")
	c.eventually(30*time.Second, "gpu-0 idle", func() (bool, string) {
		n := c.slurm("scontrol", "show", "node", "-o", "gpu-0")
		return idle(n), field(n, "State")
	})

	// node-config Gres= lowers the count through the transactional path.
	c.runAction("gpu/0", "node-config", map[string]string{"parameters": "Gres=gpu:tesla_t4:1"})
	if n := c.slurm("scontrol", "show", "node", "-o", "gpu-0"); field(n, "Gres") != "gpu:tesla_t4:1" || !idle(n) {
		t.Errorf("after node-config: Gres=%s State=%s, want gpu:tesla_t4:1 IDLE", field(n, "Gres"), field(n, "State"))
	}
	if dev := strings.TrimSpace(c.slurm("srun", "-p", "gpu", "--gres=gpu:1", "--mem=100", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")); dev != "0" {
		t.Errorf("srun --gres=gpu:1 after node-config sees %q, want 0", dev)
	}
	c.eventually(30*time.Second, "gpu/0 status after node-config", func() (bool, string) {
		_, msg := c.unitStatus("gpu/0")
		return msg == "node gpu-0 idle, 1× gpu:tesla_t4", msg
	})

	// A bad generic-resources blocks naming the entry; the node is left as it is.
	if err := c.m.SetConfig(c.bg(), "gpu", map[string]string{"generic-resources": "Name=fpga NodeName=x File=/dev/x0"}, nil); err != nil {
		t.Fatal(err)
	}
	c.eventually(30*time.Second, "gpu/0 blocked naming generic-resources", func() (bool, string) {
		st, msg := c.unitStatus("gpu/0")
		return st == "blocked" && strings.Contains(msg, `generic-resources: invalid generic resource "Name=fpga NodeName=x File=/dev/x0"`), st + ": " + msg
	})
	if n := c.slurm("scontrol", "show", "node", "-o", "gpu-0"); field(n, "Gres") != "gpu:tesla_t4:1" || !idle(n) {
		t.Errorf("after a bad generic-resources: Gres=%s State=%s, want gpu:tesla_t4:1 IDLE", field(n, "Gres"), field(n, "State"))
	}
}

// watchGres polls the controller for node's record until the returned function is called,
// which returns the Gres value of every record seen (consecutive repeats once).
func (c *cluster) watchGres(node string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var out strings.Builder
			code, err := c.m.Exec(ctx, "slurmctld/0", []string{"env", "SLURM_CONF=" + ctlConf, "scontrol", "show", "node", "-o", node}, &out, io.Discard)
			if err == nil && code == 0 {
				if g := field(out.String(), "Gres"); g != "" {
					mu.Lock()
					if len(seen) == 0 || seen[len(seen)-1] != g {
						seen = append(seen, g)
					}
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	stop := func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	c.t.Cleanup(func() { stop() })
	return stop
}

// e2eGPUJob is a running `srun --gres=gpu:1` on the controller and the device it was given.
type e2eGPUJob struct {
	name   string
	lines  chan string
	done   chan error
	device string
}

// startGPUJob starts srun on the controller asking the gpu partition for one GPU; the job
// prints CUDA_VISIBLE_DEVICES, then waits for /var/lib/juju/release on its node.
func (c *cluster) startGPUJob(name string) *e2eGPUJob {
	j := &e2eGPUJob{name: name, lines: make(chan string, 1), done: make(chan error, 1)}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "dev="); ok {
				j.lines <- v
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		ctx, cancel := c.ctx(3 * time.Minute)
		defer cancel()
		var stderr strings.Builder
		code, err := c.m.Exec(ctx, "slurmctld/0", []string{"env", "SLURM_CONF=" + ctlConf,
			"srun", "-p", "gpu", "-J", name, "--gres=gpu:1", "--mem=100", "-n1",
			"sh", "-c", `echo "dev=$CUDA_VISIBLE_DEVICES"; while [ ! -e /var/lib/juju/release ]; do sleep 0.1; done`}, pw, &stderr)
		if err == nil && code != 0 {
			err = fmt.Errorf("srun exited %d: %s", code, stderr.String())
		}
		pw.Close()
		j.done <- err
	}()
	return j
}

// waitDevice waits until the job printed its CUDA_VISIBLE_DEVICES.
func (j *e2eGPUJob) waitDevice(t *testing.T) {
	t.Helper()
	select {
	case j.device = <-j.lines:
	case err := <-j.done:
		j.done <- err
		t.Fatalf("%s ended without printing CUDA_VISIBLE_DEVICES: %v", j.name, err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no CUDA_VISIBLE_DEVICES printed", j.name)
	}
}

func (j *e2eGPUJob) wait() error {
	select {
	case err := <-j.done:
		return err
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s did not end", j.name)
	}
}

// idle reports whether the scontrol show node -o line n is of an idle node, not completing,
// drained or down (dynamic nodes show IDLE+DYNAMIC_NORM).
func idle(n string) bool {
	st := strings.Split(field(n, "State"), "+")
	return st[0] == "IDLE" && !slices.ContainsFunc(st[1:], func(f string) bool { return f != "DYNAMIC_NORM" })
}
