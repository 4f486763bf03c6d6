package slurmconf_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// valueCorpus is, per partition key, values an operator may type: the usual
// forms, the edges, and mistakes. Each is read by ValidatePartitionValues and
// by the real Slurm parser.
var valueCorpus = map[string][]string{
	"AllocNodes":           {"ALL", "login1", "login[1-3],head", "a b", "x[1-", "bad!"},
	"AllowAccounts":        {"ALL", "physics", "a,b,c", "a,,b", "bad!name"},
	"AllowGroups":          {"ALL", "users", "hpc,admins", "a b"},
	"AllowQos":             {"ALL", "normal,high", "x;y"},
	"Alternate":            {"other", "two,names"},
	"CpuBind":              {"core", "threads", "none", "socket,verbose", "bogus", "core,socket"},
	"Default":              {"YES", "no", "true", "0", "maybe", ""},
	"DefaultTime":          {"10", "10:00", "1:00:00", "2-0", "2-12:30", "2-12:30:15", "UNLIMITED", "INFINITE", "-1", "abc", "-5", "1:2:3:4", "1-2-3", "10 min"},
	"DefCpuPerGPU":         {"2", "0", "abc", "-1", "UNLIMITED"},
	"DefMemPerCPU":         {"1024", "4k", "abc", "-1", "1G"},
	"DefMemPerGPU":         {"2048", "x"},
	"DefMemPerNode":        {"4000", "UNLIMITED", "4000MB"},
	"DenyAccounts":         {"guest", "a,b"},
	"DenyQos":              {"low", "a b"},
	"DisableRootJobs":      {"YES", "NO", "perhaps"},
	"Exclusive":            {"NO", "NONE", "NODE", "USER", "topo", "YES", "NODE,USER", ""},
	"ExclusiveTopo":        {"YES", "NO", "maybe", "2"},
	"ExclusiveUser":        {"YES", "1", "2"},
	"GraceTime":            {"60", "0", "abc", "-1", "4294967295", "4294967296"},
	"Hidden":               {"YES", "NO", "maybe"},
	"LLN":                  {"YES", "nope"},
	"MaxCPUsPerNode":       {"64", "UNLIMITED", "x", "-3"},
	"MaxCPUsPerSocket":     {"8", "UNLIMITED", "x", "-3", "4294967296"},
	"MaxMemPerCPU":         {"2048", "abc"},
	"MaxMemPerNode":        {"64000", "UNLIMITED", "10X", "-1"},
	"MaxNodes":             {"10", "UNLIMITED", "INFINITE", "abc", "-1", "1k", "99999999999", "0x10"},
	"MaxTime":              {"1:00:00", "60", "UNLIMITED", "7-0", "abc", "-5", "1:", ":30", "1-2:3:4:5", "1-"},
	"MinNodes":             {"0", "1", "-1", "one"},
	"OverSubscribe":        {"NO", "YES", "YES:4", "FORCE", "FORCE:2", "EXCLUSIVE", "blah", "YES:1", "FORCE:0", "NO:2"},
	"OverTimeLimit":        {"5", "UNLIMITED", "-1", "abc"},
	"PowerDownOnIdle":      {"YES", "NO", "maybe"},
	"PreemptMode":          {"OFF", "CANCEL", "REQUEUE", "SUSPEND,GANG", "GANG", "REQUEUE,WITHIN", "foo", "CANCEL,REQUEUE", "GANG,WITHIN"},
	"Priority":             {"10", "65535", "65536", "abc", "-1"},
	"PriorityJobFactor":    {"1", "x"},
	"PriorityTier":         {"5", "70000"},
	"QOS":                  {"normal", "a,b"},
	"ReqResv":              {"NO", "y"},
	"ResumeTimeout":        {"300", "x", "70000"},
	"RootOnly":             {"YES", "si"},
	"SelectTypeParameters": {"CR_Core", "CR_Socket_Memory", "CR_Core_Memory", "CR_Bogus", "CR_CPU", "CR_Core_bogus"},
	"Shared":               {"NO", "FORCE:3", "bogus"},
	"SuspendTime":          {"600", "INFINITE", "-1", "99999999999", "abc"},
	"SuspendTimeout":       {"30", "-1", "x"},
	"TRESBillingWeights":   {"CPU=1.0,Mem=0.25G", "CPU=2,GRES/gpu=4.0", "abc", "CPU=x"},
	"Topology":             {"default", "fabric1", "two,names"},
}

// stricter lists the values Slurm 22.05 reads without a word of error but
// that ValidatePartitionValues refuses on purpose: garbage Slurm reads as 0
// or as a prefix, names a Slurm parser never checks, a hostlist that cannot be
// expanded. Every other value must get the same verdict from both.
var stricter = map[string]bool{
	"AllocNodes=a b": true, "AllocNodes=x[1-": true, "AllocNodes=bad!": true,
	"AllowAccounts=a,,b": true, "AllowAccounts=bad!name": true, "AllowGroups=a b": true,
	"AllowQos=x;y": true, "Alternate=two,names": true, "DenyQos=a b": true, "QOS=a,b": true,
	"TRESBillingWeights=abc": true, "TRESBillingWeights=CPU=x": true,
	"MaxNodes=0x10": true, "OverTimeLimit=abc": true, "SelectTypeParameters=CR_Core_bogus": true,
	"SuspendTime=abc": true, "MaxTime=1-": true, "Topology=two,names": true,
}

// stricterFrom lists, per release, the values that release reads without an
// error while ValidatePartitionValues refuses them, besides those of
// stricter: 24.11 and 26.05 read any PreemptMode when they parse slurm.conf
// (and check it only later, in slurmctld).
var stricterFrom = map[string]map[string]bool{
	"24.11": {"PreemptMode=foo": true, "PreemptMode=CANCEL,REQUEUE": true, "PreemptMode=GANG,WITHIN": true},
	"26.05": {"PreemptMode=foo": true, "PreemptMode=CANCEL,REQUEUE": true, "PreemptMode=GANG,WITHIN": true},
}

// slurmVerdict is what the real parser makes of text: refused (non-zero exit),
// ignored with an error message, or accepted.
func slurmVerdict(t *testing.T, bin, text string) (verdict, out string) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, "show", "hostnames", "x")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return "refused", string(b)
	case err != nil:
		t.Fatalf("cannot run scontrol: %v", err)
	case strings.Contains(string(b), "error:"):
		return "ignored", string(b)
	}
	return "accepted", string(b)
}

// TestPartitionValuesAgainstSlurm proves the installed release's
// ValidatePartitionValues against its parser over valueCorpus: a value is
// accepted exactly when Slurm accepts it without an error, except the values
// listed in stricter and stricterFrom, which Slurm accepts silently and we
// refuse. Keys the release does not have are left out.
func TestPartitionValuesAgainstSlurm(t *testing.T) {
	t.Parallel()
	bin := scontrol(t)
	keys := slurmKeys(t, bin)
	for _, key := range keys.PartitionKeys() {
		if key == "Nodes" || key == "State" {
			continue // managed by the charms: refused whatever the value (TestPartitionValues)
		}
		if _, ok := valueCorpus[key]; !ok {
			t.Errorf("partition key %s has no values in the corpus", key)
		}
	}
	for key, values := range valueCorpus {
		if !slices.Contains(keys.PartitionKeys(), key) {
			t.Logf("%s left out: not a partition key of Slurm %s", key, keys.Release())
			continue
		}
		for _, v := range values {
			pair := key + "=" + v
			t.Run(pair, func(t *testing.T) {
				t.Parallel()
				p := slurmconf.Params{{Key: key, Value: v}}
				ours := keys.ValidatePartitionValues(p)
				verdict, out := slurmVerdict(t, bin, oracleBase+"PartitionName=p Nodes=n1 "+p.String()+"\n")
				slurmOK := verdict == "accepted"
				if stricter[pair] || stricterFrom[keys.Release()][pair] {
					if ours == nil || !slurmOK {
						t.Errorf("listed as stricter than Slurm, but ours: %v; Slurm %s:\n%s", ours, verdict, out)
					}
					return
				}
				if (ours == nil) != slurmOK {
					t.Errorf("ours: %v; Slurm %s:\n%s", ours, verdict, out)
				}
			})
		}
	}
}

func TestPartitionValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line string
		wantKey    string // "" = valid
	}{
		{name: "usual", line: "MaxTime=1:00:00 DefaultTime=10:00 MaxNodes=4 Hidden=NO OverSubscribe=FORCE:2"},
		{name: "bad time", line: "MaxTime=abc", wantKey: "MaxTime"},
		{name: "bad count", line: "MaxNodes=abc", wantKey: "MaxNodes"},
		{name: "bad boolean", line: "Default=maybe", wantKey: "Default"},
		{name: "state is managed", line: "State=DOWN", wantKey: "State"},
		{name: "nodes are managed", line: "Nodes=other", wantKey: "Nodes"},
		{name: "absurd size", line: "AllowGroups=" + strings.Repeat("g", 10000), wantKey: "AllowGroups"},
		{name: "hex refused", line: "MaxNodes=0x10", wantKey: "MaxNodes"},
		{name: "unknown key", line: "MaxTme=5", wantKey: "MaxTme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := slurmconf.ParseParams(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			err = slurmconf.ValidatePartitionValues(p)
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("ValidatePartitionValues: %v", err)
				}
				return
			}
			var pe *slurmconf.ParseError
			if !errors.As(err, &pe) || pe.Key != tt.wantKey {
				t.Fatalf("error %v, want a ParseError naming %s", err, tt.wantKey)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error message is %d characters long: it must not echo an absurd value whole", len(err.Error()))
			}
		})
	}
}

func FuzzPartitionValues(f *testing.F) {
	for key, values := range valueCorpus {
		for _, v := range values {
			f.Add(key, v)
		}
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		p := slurmconf.Params{{Key: key, Value: value}}
		for _, keys := range allReleases {
			err := keys.ValidatePartitionValues(p)
			if err == nil && p.Check() != nil {
				t.Fatalf("%s accepted %s=%q, which slurm.conf cannot express", keys.Release(), key, value)
			}
		}
		if (slurmconf.ValidatePartitionValues(p) == nil) != (slurmconf.KeysOf(22, 5).ValidatePartitionValues(p) == nil) {
			t.Fatalf("ValidatePartitionValues and 22.05's set disagree on %s=%q", key, value)
		}
	})
}
