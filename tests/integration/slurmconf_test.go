package integration_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/libs/slurmconf"
	"github.com/charmed-slurm/operators/tests/hosts"
)

// TestSlurmctldAcceptsEditedConf proves that slurm.conf files produced by
// editing a parsed document are accepted by a real slurmctld 22.05: at start
// (a NodeSet and Partition added, a global key changed) and on
// `scontrol reconfigure` after a second edit.
func TestSlurmctldAcceptsEditedConf(t *testing.T) {
	t.Parallel()
	edit := func(data []byte, fn func(*slurmconf.Doc) error) []byte {
		t.Helper()
		doc, err := slurmconf.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(data), string(doc.Bytes())); d != "" {
			t.Fatalf("unedited document does not render byte-identical (-in +out):\n%s", d)
		}
		if err := fn(doc); err != nil {
			t.Fatal(err)
		}
		if err := doc.Validate(); err != nil {
			t.Fatal(err)
		}
		return doc.Bytes()
	}
	addPartition := func(name, line string) func(*slurmconf.Doc) error {
		return func(doc *slurmconf.Doc) error {
			if err := doc.SetNodeSet(slurmconf.NodeSet{Name: name, Params: slurmconf.Params{{Key: "Feature", Value: name}}}); err != nil {
				return err
			}
			p, err := slurmconf.ParsePartition(line)
			if err != nil {
				return err
			}
			return doc.SetPartition(p)
		}
	}

	c := newCluster(t, func(ctl *hosts.Host) []byte {
		return edit(baseConf(t, ctl), func(doc *slurmconf.Doc) error {
			if err := addPartition("gpu", `PartitionName=gpu Nodes=gpu MaxTime=30:00 State=UP`)(doc); err != nil {
				return err
			}
			return doc.Set("SlurmctldDebug", "debug")
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	checkPartition(t, c, ctx, "gpu", map[string]string{"PartitionName": "gpu", "NodeSets": "gpu", "MaxTime": "00:30:00", "State": "UP"})
	checkPartition(t, c, ctx, "base", map[string]string{"PartitionName": "base", "NodeSets": "base", "Default": "YES"})
	cfg, err := c.scontrol(ctx, "show", "config")
	if err != nil {
		t.Fatal(err)
	}
	if !hasConfigLine(cfg, "SlurmctldDebug", "debug") {
		t.Errorf("scontrol show config lacks SlurmctldDebug = debug:\n%s", cfg)
	}

	// Second edit on the running controller, then reconfigure.
	data, err := os.ReadFile(c.ctl.Path(confPath))
	if err != nil {
		t.Fatal(err)
	}
	data = edit(data, func(doc *slurmconf.Doc) error {
		if err := addPartition("big", `PartitionName=big Nodes=big MaxTime=2:00:00 PriorityTier=2 State=UP`)(doc); err != nil {
			return err
		}
		return doc.Set("SlurmctldDebug", "verbose")
	})
	if err := os.WriteFile(c.ctl.Path(confPath), data, 0o644); err != nil { // in place: the bind-mounted dir keeps it
		t.Fatal(err)
	}
	if _, err := c.scontrol(ctx, "reconfigure"); err != nil {
		t.Fatal(err)
	}
	checkPartition(t, c, ctx, "big", map[string]string{"PartitionName": "big", "NodeSets": "big", "MaxTime": "02:00:00", "PriorityTier": "2"})
	checkPartition(t, c, ctx, "gpu", map[string]string{"PartitionName": "gpu", "NodeSets": "gpu"})
	cfg, err = c.scontrol(ctx, "show", "config")
	if err != nil {
		t.Fatal(err)
	}
	if !hasConfigLine(cfg, "SlurmctldDebug", "verbose") {
		t.Errorf("after reconfigure, scontrol show config lacks SlurmctldDebug = verbose:\n%s", cfg)
	}
}

// checkPartition checks fields of `scontrol show partition -o name`.
func checkPartition(t *testing.T, c *cluster, ctx context.Context, name string, want map[string]string) {
	t.Helper()
	out, err := c.scontrol(ctx, "show", "partition", "-o", name)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, wanted := want[k]; wanted {
				got[k] = v
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("partition %s (-want +got):\n%s\nfull: %s", name, d, out)
	}
}

func hasConfigLine(cfg, key, value string) bool {
	for _, line := range strings.Split(cfg, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key && strings.TrimSpace(v) == value {
			return true
		}
	}
	return false
}
