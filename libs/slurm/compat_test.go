package slurm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmed-slurm/operators/libs/slurm"
)

func TestCheckNodeVersion(t *testing.T) {
	v := func(s string) slurm.Version {
		t.Helper()
		x, err := slurm.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tt := range []struct {
		ctl, node string
		// want is "" (accepted), "newer" or "old".
		want string
	}{
		{"22.05.8", "22.05.8", ""},
		{"24.11.5", "24.11.1", ""},      // micro releases of one major mix freely
		{"24.11.5", "24.11.9", ""},      // also a newer micro
		{"24.11.5", "23.02.7", ""},      // 24.11 accepts the three releases before it
		{"24.11.5", "22.05.8", "old"},   // the fourth before it
		{"24.05.4", "23.02.7", ""},      // 24.05: two before it
		{"24.05.4", "22.05.8", "old"},   // the third
		{"23.11.10", "22.05.8", ""},     // 23.11: 23.02 and 22.05
		{"26.05.5", "24.11.5", ""},      // 26.05: 25.11, 25.05, 24.11 (its release notes)
		{"26.05.5", "24.05.4", "old"},   //
		{"26.05.5", "22.05.8", "old"},   //
		{"24.11.5", "26.05.5", "newer"}, // an upgrade in the wrong order
		{"22.05.8", "24.11.5", "newer"}, //
		{"25.11.2", "26.05.0", "newer"}, //
		{"26.05.5", "26.11.0", "newer"}, // a release this package does not know yet
		{"27.05.0", "26.05.5", ""},      // nor this one: within three
		{"0.0.0", "26.05.5", ""},        // unknown controller: not refused
	} {
		t.Run(tt.ctl+" "+tt.node, func(t *testing.T) {
			var ctl slurm.Version
			if tt.ctl != "0.0.0" {
				ctl = v(tt.ctl)
			}
			node := v(tt.node)
			err := slurm.CheckNodeVersion(ctl, node)
			var me *slurm.VersionMismatchError
			switch tt.want {
			case "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			case "newer", "old":
				if !errors.As(err, &me) || me.Newer != (tt.want == "newer") {
					t.Fatalf("got %v, want a %s VersionMismatchError", err, tt.want)
				}
			}
			// The message names both versions.
			if msg := err.Error(); !strings.Contains(msg, "slurmd "+node.String()) || !strings.Contains(msg, "slurmctld "+ctl.String()) {
				t.Errorf("message %q does not name both versions", msg)
			}
		})
	}
}

// TestCheckLoginVersion: a login node's sackd is held to the rule of slurmd, and the message
// names sackd.
func TestCheckLoginVersion(t *testing.T) {
	v2411, v2605 := slurm.Version{Major: 24, Minor: 11, Micro: 5}, slurm.Version{Major: 26, Minor: 5, Micro: 5}
	for _, tt := range []struct {
		name      string
		ctl, node slurm.Version
		want      string
	}{
		{"same", v2605, v2605, ""},
		{"older within three", v2605, v2411, ""},
		{"newer", v2411, v2605, "sackd 26.05.5 is newer than slurmctld 24.11.5: Slurm accepts no daemon newer than its controller; upgrade slurmctld first"},
		{"too old", v2605, slurm.Version{Major: 23, Minor: 11, Micro: 10},
			"sackd 23.11.10 is too old for slurmctld 26.05.5 (it accepts sackd of its own release and the 3 before it): upgrade sackd"},
		{"unknown controller", slurm.Version{}, v2605, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := slurm.CheckLoginVersion(tt.ctl, tt.node)
			var got string
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckLoginVersion(%v, %v) = %q, want %q", tt.ctl, tt.node, got, tt.want)
			}
		})
	}
}

// FuzzCheckNodeVersion: never refuses a node of the controller's own major release, always
// refuses one of a later major.minor.
func FuzzCheckNodeVersion(f *testing.F) {
	f.Add(26, 5, 5, 24, 11, 5)
	f.Add(24, 11, 5, 26, 5, 0)
	f.Fuzz(func(t *testing.T, cMaj, cMin, cMic, nMaj, nMin, nMic int) {
		ctl := slurm.Version{Major: cMaj, Minor: cMin, Micro: cMic}
		node := slurm.Version{Major: nMaj, Minor: nMin, Micro: nMic}
		err := slurm.CheckNodeVersion(ctl, node)
		if ctl.IsZero() || node.IsZero() {
			if err != nil {
				t.Fatalf("unknown version refused: %v", err)
			}
			return
		}
		if cMaj == nMaj && cMin == nMin && err != nil {
			t.Fatalf("same release refused: %v", err)
		}
		if (nMaj > cMaj || nMaj == cMaj && nMin > cMin) && err == nil {
			t.Fatalf("slurmd %v newer than slurmctld %v accepted", node, ctl)
		}
	})
}

func TestCheckConfVersion(t *testing.T) {
	v := func(s string) slurm.Version {
		t.Helper()
		if s == "" {
			return slurm.Version{}
		}
		x, err := slurm.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tc := range []struct {
		needed, node string
		want         string
	}{
		{"", "24.11.5", ""},
		{"25.11.0", "", ""},
		{"25.11.0", "25.11.0", ""},
		{"25.11.0", "26.05.5", ""},
		{"25.11.0", "25.11.9", ""},
		{"25.11.0", "25.05.4", "slurmd 25.05.4 cannot read the configuration slurmctld serves (it needs Slurm 25.11 or later): waiting for slurmctld to leave out the keys slurmd 25.05 lacks"},
		{"25.11.0", "24.11.5", "slurmd 24.11.5 cannot read the configuration slurmctld serves (it needs Slurm 25.11 or later): waiting for slurmctld to leave out the keys slurmd 24.11 lacks"},
	} {
		err := slurm.CheckConfVersion("slurmd", v(tc.needed), v(tc.node))
		got := ""
		if err != nil {
			got = err.Error()
			var ce *slurm.ConfVersionError
			if !errors.As(err, &ce) || ce.Node != v(tc.node) || ce.Needed != v(tc.needed) {
				t.Errorf("%s, %s: %#v, want a *ConfVersionError naming both", tc.needed, tc.node, err)
			}
		}
		if got != tc.want {
			t.Errorf("CheckConfVersion(%s, %s) = %q, want %q", tc.needed, tc.node, got, tc.want)
		}
	}
}
