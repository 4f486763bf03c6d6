package slurmconf_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// scontrol returns the path of the real scontrol. Without it the test is
// skipped with a loud reason, or fails when CI=true.
func scontrol(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("scontrol")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("scontrol (Slurm 22.05) is required in CI: %v", err)
		}
		t.Skipf("SKIPPED: scontrol not found (%v): install slurm-client to compare with real Slurm", err)
	}
	return path
}

// slurmKeys returns the key set of the installed Slurm's release, by `scontrol -V`
// (which wants a slurm.conf to read).
func slurmKeys(t *testing.T, bin string) *slurmconf.Keys {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte(oracleBase), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, "-V")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scontrol -V: %v", err)
	}
	v, err := slurm.ParseVersion(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	keys := slurmconf.KeysOf(v.Major, v.Minor)
	t.Logf("Slurm %s: key set of %s", v, keys.Release())
	return keys
}

// allReleases are the key sets this package knows, one per proven release.
var allReleases = []*slurmconf.Keys{slurmconf.KeysOf(22, 5), slurmconf.KeysOf(24, 11), slurmconf.KeysOf(26, 5)}

// union is every key list(k) gives for a known release, each once, sorted.
func union(list func(*slurmconf.Keys) []string) []string {
	var all []string
	for _, k := range allReleases {
		all = append(all, list(k)...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

var slurmParseError = regexp.MustCompile(`(?m)^.*(Parse error|Parsing error|unrecognized key).*$`)

// slurmParse makes the real Slurm parser read text as slurm.conf and returns
// the parse errors it reports. `scontrol show hostnames` reads slurm.conf and
// exits without contacting any daemon.
func slurmParse(t *testing.T, bin, text string) []string {
	t.Helper()
	_, out := slurmVerdict(t, bin, text)
	return slurmParseError.FindAllString(out, -1)
}

const oracleBase = "ClusterName=oracle\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\n"

// TestKeysAgainstSlurm checks the key set of the installed Slurm's release
// against its parser: every key of the set is recognised, and the keys of
// the other known releases that the set leaves out, and keys no release
// has, are refused by Slurm too. Global keys are probed as "Key=1" lines.
func TestKeysAgainstSlurm(t *testing.T) {
	t.Parallel()
	bin := scontrol(t)
	keys := slurmKeys(t, bin)
	type probe struct {
		line   string
		accept bool
	}
	var probes []probe
	for _, k := range union((*slurmconf.Keys).PartitionKeys) {
		probes = append(probes, probe{"PartitionName=p " + k + "=1", slices.Contains(keys.PartitionKeys(), k)})
	}
	for _, k := range union((*slurmconf.Keys).NodeKeys) {
		probes = append(probes, probe{"NodeName=n2 " + k + "=1", slices.Contains(keys.NodeKeys(), k)})
	}
	for _, k := range union((*slurmconf.Keys).GlobalKeys) {
		probes = append(probes, probe{k + "=1", slices.Contains(keys.GlobalKeys(), k)})
	}
	for _, line := range []string{"MinJobAg=1", "SlurmctldPortt=1", "AuthKey=1", "TRESBillingWeights=CPU=1", "UsePss=1"} {
		probes = append(probes, probe{line, false})
	}
	for _, line := range []string{"NodeSet=s Feature=f", "NodeSet=s Nodes=n1", "DownNodes=n1 State=DOWN", "DownNodes=n1 Reason=x"} {
		probes = append(probes, probe{line, true})
	}
	for _, line := range []string{
		"PartitionName=p Nodes=n1 AllowUsers=a", "NodeName=n2 Extra=x", "NodeName=n2 Comment=x",
		"NodeSet=s Features=f", "NodeSet=s Weight=1", "DownNodes=n1 CPUs=1",
	} {
		probes = append(probes, probe{line, false})
	}
	for _, p := range probes {
		t.Run(p.line, func(t *testing.T) {
			t.Parallel()
			var ours error
			switch {
			case strings.HasPrefix(p.line, "PartitionName"):
				_, ours = keys.ParsePartition(p.line)
			case strings.HasPrefix(p.line, "NodeName"):
				_, ours = keys.ParseNode(p.line)
			case strings.HasPrefix(p.line, "NodeSet"):
				_, ours = keys.ParseNodeSet(p.line)
			case strings.HasPrefix(p.line, "DownNodes"):
				_, ours = keys.ParseDownNodes(p.line)
			default:
				key, _, _ := strings.Cut(p.line, "=")
				if _, ok := keys.GlobalKey(key); !ok {
					ours = errors.New("unknown global key " + key)
				}
			}
			theirs := slurmParse(t, bin, oracleBase+p.line+"\n")
			if (ours == nil) != p.accept || (len(theirs) == 0) != p.accept {
				t.Errorf("want accepted=%v; this package: %v; Slurm: %q", p.accept, ours, theirs)
			}
		})
	}
}

// TestDocsAgainstSlurm makes the real Slurm parser read every corpus file
// and every edited golden output: Slurm reports a parse error exactly when
// Doc.ValidateFor with the installed release's key set does. Files with Include lines are left out (their targets
// do not exist here).
func TestDocsAgainstSlurm(t *testing.T) {
	t.Parallel()
	bin := scontrol(t)
	keys := slurmKeys(t, bin)
	files, err := filepath.Glob("testdata/edit/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, corpus(t)...)
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d := mustParse(t, data)
		if len(d.Includes()) > 0 || len(d.FrontendNames()) > 0 || len(d.Params()) == 0 {
			// Not a test case (a skipped subtest would fail `make test` under CI=true).
			t.Logf("%s left out: includes, front ends or no parameters: not a stand-alone slurm.conf", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ours := d.ValidateFor(keys)
			theirs := slurmParse(t, bin, string(data))
			if (ours == nil) != (len(theirs) == 0) {
				t.Errorf("Validate: %v; Slurm: %q", ours, theirs)
			}
		})
	}
}
