package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
	"github.com/charmed-slurm/operators/tests/model"
)

// The MPI workload: a real Open MPI program (testdata/ring.c) launched by srun through Slurm's
// PMIx plugin, one rank on each of three dynamic nodes, every rank checking what it receives.

// TestMPI runs the ring on Pebble hosts: Slurm 22.05 and Open MPI 4.1 with PMIx 4.2, from
// Debian 12.
func TestMPI(t *testing.T) {
	t.Parallel()
	ring := ringBinary(t)
	mpiRing(t, newCluster(t, 3), ring)
}

// TestMPITrixie runs the same binary on Debian 13 machines: Slurm 24.11 (auth/slurm) and
// Open MPI 5.0 with PMIx 5, from the image (scripts/images.sh).
func TestMPITrixie(t *testing.T) {
	t.Parallel()
	ring := ringBinary(t)
	mpiRing(t, newClusterOn(t, model.BaseTrixie, 3), ring)
}

var (
	ringOnce sync.Once
	ringPath string
	ringErr  error
)

// ringBinary builds testdata/ring.c with mpicc once per test binary, beside the hook tools:
// a directory every unit's host and machine sees at the same path (newClusterWith's binds).
// Without mpicc the test skips, or fails under CI=true.
func ringBinary(t *testing.T) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		hoststest.Skip(t, "mpicc (Debian's libopenmpi-dev; scripts/deps.sh installs it)")
	}
	ringOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "testdata", "ring.c")
		out := filepath.Join(filepath.Dir(toolsBin), "ring")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, mpicc, "-O2", "-Wall", "-Werror", "-o", out, src)
		if b, err := cmd.CombinedOutput(); err != nil {
			ringErr = fmt.Errorf("cannot build %s: %v: %s", src, err, b)
			return
		}
		ringPath = out
	})
	if ringErr != nil {
		t.Fatal(ringErr)
	}
	return ringPath
}

// openMPIInitRace reports whether a launch failed by Open MPI 5.0's own race in MPI_Init: a
// rank that left the PMIx fence early sends its first message to a rank still waiting in the
// fence, whose ob1 PML matches it against an MPI_COMM_WORLD it has not set up yet and crashes
// (open-mpi/ompi#12495, #13559). Seen once in a CI run on Debian 13 machines (Open MPI 5.0,
// load 17): rank 1 died with a segmentation fault in mca_pml_ob1_recv_frag_callback_match under
// MPI_Init, the other ranks exited 14.
func openMPIInitRace(stderr string) bool {
	return strings.Contains(stderr, "mca_pml_ob1_recv_frag_callback_match") && strings.Contains(stderr, "MPI_Init")
}

// ringLineRE is one rank's report (testdata/ring.c).
var ringLineRE = regexp.MustCompile(`^rank (\d+) of (\d+) on (\S+): from rank (\d+) on (\S+), (\d+) bytes intact, sum (\d+)$`)

// ringRank is what one rank said.
type ringRank struct {
	host, fromHost string
	from, size     int
}

// mpiRing runs ring with srun --mpi=pmix across the three nodes of c (application "slurmd")
// and checks every rank's report: one rank per node, each on its own unit's host, each
// received the intact message of the rank before it on the host that rank runs on. It also
// checks that a launch without PMIx fails rather than run three unconnected copies.
func mpiRing(t *testing.T, c *cluster, ring string) {
	c.waitIdleNodes(3)
	var hostnames []string
	for i := range 3 {
		hostnames = append(hostnames, strings.TrimSpace(c.exec(fmt.Sprintf("slurmd/%d", i), "hostname")))
	}
	slices.Sort(hostnames)

	// PMIX_MCA_gds=hash: the ranks keep PMIx's job data in PMIx's hash store, not in the
	// shared-memory store (gds ds21) that Slurm's PMIx server offers them. With the shared
	// store, Open MPI 4.1 on Debian 12's PMIx 4.2 crashed a rank in MPI_Init (a segmentation
	// fault at address 0, with the other ranks left waiting in the first fence) in 3 of 9 runs
	// beside TestMPITrixie at load 6-11; with the hash store 0 of 10 at load 8-16 (README, MPI
	// jobs). --kill-on-bad-exit: a rank that dies ends the step at once, as mpirun would,
	// instead of leaving the others in the fence until the exec's bound.
	srun := []string{"env", "SLURM_CONF=" + ctlConf, "PMIX_MCA_gds=hash", "srun", "-p", "slurmd", "-N3", "-n3", "--ntasks-per-node=1", "--time=2", "--kill-on-bad-exit=1"}
	out, code, stderr := c.tryExec("slurmctld/0", append(srun, "--mpi=pmix", ring)...)
	if code != 0 && openMPIInitRace(stderr) {
		// Not Slurm's fault nor ours: launch once more, and only once.
		t.Logf("Open MPI's MPI_Init race (a rank received its peer's first message before its MPI_COMM_WORLD was set up; open-mpi/ompi#13559): launching the ring once more:\n%s", stderr)
		out, code, stderr = c.tryExec("slurmctld/0", append(srun, "--mpi=pmix", ring)...)
	}
	if code != 0 {
		t.Fatalf("srun --mpi=pmix ring exited %d:\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	ranks := map[int]ringRank{}
	library := ""
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if lib, ok := strings.CutPrefix(line, "library: "); ok {
			library = lib
			continue
		}
		m := ringLineRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected line from the ring: %q", line)
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		size, _ := strconv.Atoi(m[2])
		from, _ := strconv.Atoi(m[4])
		if _, dup := ranks[rank]; dup {
			t.Errorf("rank %d reported twice", rank)
		}
		ranks[rank] = ringRank{host: m[3], fromHost: m[5], from: from, size: size}
	}
	t.Logf("ring on %s: %s", strings.Join(hostnames, " "), library)
	if !strings.HasPrefix(library, "Open MPI v") {
		t.Errorf("rank 0 reports library %q, want Open MPI", library)
	}
	if len(ranks) != 3 {
		t.Fatalf("%d ranks reported, want 3:\n%s\nstderr:\n%s", len(ranks), out, stderr)
	}
	var seen []string
	for r := range 3 {
		got, ok := ranks[r]
		if !ok {
			t.Fatalf("rank %d did not report:\n%s", r, out)
		}
		prev := (r + 2) % 3
		if got.size != 3 || got.from != prev || got.fromHost != ranks[prev].host {
			t.Errorf("rank %d: size %d, from rank %d on %s; want size 3, from rank %d on %s",
				r, got.size, got.from, got.fromHost, prev, ranks[prev].host)
		}
		seen = append(seen, got.host)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, hostnames) {
		t.Errorf("ranks ran on %v, want one on each unit's host %v", seen, hostnames)
	}

	// Without PMIx Debian's Open MPI, built for PMIx only, cannot wire the ranks up: the launch
	// must fail, not pass as three unconnected copies. (Open MPI 4.1 stops in MPI_Init under
	// --mpi=none and --mpi=pmi2; 5.0 under pmi2, and under none starts every rank as a
	// singleton of a world of 1, which the ring refuses.)
	for _, mpi := range []string{"--mpi=none", "--mpi=pmi2"} {
		out, code, stderr := c.tryExec("slurmctld/0", append(srun, mpi, ring)...)
		if code == 0 {
			t.Errorf("srun %s ring exited 0, want a failure:\n%s\n%s", mpi, out, stderr)
		}
	}
}
