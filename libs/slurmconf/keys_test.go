package slurmconf_test

import (
	"testing"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/google/go-cmp/cmp"
)

func TestKeysOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		major, minor int
		want         string
	}{
		{0, 0, "22.05"}, // unknown version: the oldest supported release
		{22, 5, "22.05"},
		{23, 1, "22.05"},
		{23, 2, "24.11"},
		{23, 11, "24.11"},
		{24, 11, "24.11"},
		{25, 5, "24.11"}, // between proven releases: the older set
		{25, 11, "24.11"},
		{26, 1, "24.11"},
		{26, 5, "26.05"},
		{26, 11, "26.05"},
		{27, 5, "26.05"},
	}
	for _, tt := range tests {
		if got := slurmconf.KeysOf(tt.major, tt.minor).Release(); got != tt.want {
			t.Errorf("KeysOf(%d, %d).Release() = %q, want %q", tt.major, tt.minor, got, tt.want)
		}
	}
}

// accepts reports whether k (nil: the package-level functions, 22.05's set) accepts text as
// a line of the given kind.
func accepts(k *slurmconf.Keys, kind, text string) bool {
	var err error
	ok := true
	switch kind {
	case "partition keys":
		if k == nil {
			err = slurmconf.ValidatePartitionParams(mustParams(text))
		} else {
			err = k.ValidatePartitionParams(mustParams(text))
		}
	case "partition values":
		if k == nil {
			err = slurmconf.ValidatePartitionValues(mustParams(text))
		} else {
			err = k.ValidatePartitionValues(mustParams(text))
		}
	case "node":
		if k == nil {
			_, err = slurmconf.ParseNode(text)
		} else {
			_, err = k.ParseNode(text)
		}
	case "global":
		if k == nil {
			_, ok = slurmconf.GlobalKey(text)
		} else {
			_, ok = k.GlobalKey(text)
		}
	case "document":
		d, perr := slurmconf.Parse([]byte(text))
		switch {
		case perr != nil:
			err = perr
		case k == nil:
			err = d.Validate()
		default:
			err = d.ValidateFor(k)
		}
	default:
		panic("unknown kind " + kind)
	}
	return ok && err == nil
}

func mustParams(text string) slurmconf.Params {
	p, err := slurmconf.ParseParams(text)
	if err != nil {
		panic(err)
	}
	return p
}

// TestKeysDiffer pins what differs between the releases' key sets (Old 22.05, New 24.11,
// Newest 26.05; each set is proven
// against its release's parser by the oracle tests) and that the package-level functions
// keep 22.05's set.
func TestKeysDiffer(t *testing.T) {
	t.Parallel()
	type verdicts struct{ Old, New, Newest, Default bool }
	tests := []struct {
		kind, text string
		want       verdicts
	}{
		{"partition keys", "MaxCPUsPerSocket=2", verdicts{New: true, Newest: true}},
		{"partition values", "PowerDownOnIdle=YES", verdicts{New: true, Newest: true}},
		{"partition values", "PowerDownOnIdle=maybe", verdicts{}},
		{"partition values", "MaxCPUsPerSocket=x", verdicts{}},
		{"partition values", "ExclusiveTopo=YES", verdicts{New: true, Newest: true}},
		{"partition values", "ExclusiveUser=YES", verdicts{Old: true, New: true, Newest: true, Default: true}},
		{"partition values", "Exclusive=TOPO", verdicts{Newest: true}},
		{"partition values", "Exclusive=user", verdicts{Newest: true}},
		{"partition values", "Exclusive=YES", verdicts{}},
		{"partition values", "Exclusive=NODE,USER", verdicts{}},
		{"partition keys", "Topology=fabric1", verdicts{Newest: true}},
		{"node", "NodeName=n1 RestrictedCoresPerGPU=1", verdicts{New: true, Newest: true}},
		{"node", "NodeName=n1 SuspendTime=600", verdicts{Newest: true}},
		{"node", "NodeName=n1 Parameters=l3cache_as_socket", verdicts{Newest: true}},
		{"node", "NodeName=n1 GresConf=x", verdicts{Newest: true}},
		{"node", "NodeName=n1 Topology=default:s1", verdicts{Newest: true}},
		{"global", "slurmctldplugstack", verdicts{Old: true, Default: true}},
		{"global", "HashPlugin", verdicts{New: true, Newest: true}},
		{"global", "MetricsType", verdicts{Newest: true}},
		{"global", "NamespaceType", verdicts{Newest: true}},
		{"global", "JobContainerType", verdicts{Old: true, New: true, Newest: true, Default: true}},
		{"global", "MinJobAge", verdicts{Old: true, New: true, Newest: true, Default: true}},
		{"document", "PartitionName=p Nodes=ALL PowerDownOnIdle=YES\n", verdicts{New: true, Newest: true}},
		{"document", "PartitionName=p Nodes=ALL Exclusive=USER\n", verdicts{Newest: true}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.text, func(t *testing.T) {
			got := verdicts{
				Old:     accepts(slurmconf.KeysOf(22, 5), tt.kind, tt.text),
				New:     accepts(slurmconf.KeysOf(24, 11), tt.kind, tt.text),
				Newest:  accepts(slurmconf.KeysOf(26, 5), tt.kind, tt.text),
				Default: accepts(nil, tt.kind, tt.text),
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("accepted (-want +got):\n%s", d)
			}
		})
	}
}
