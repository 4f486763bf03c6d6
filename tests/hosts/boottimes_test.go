package hosts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/tests/hosts"
)

func TestParseBootTimes(t *testing.T) {
	started := time.Date(2026, 11, 23, 22, 52, 23, 123456000, time.UTC)
	finished := time.Date(2026, 11, 23, 22, 52, 26, 654321000, time.UTC)
	for _, tc := range []struct {
		name, out string
		want      hosts.BootTimes
		wantErr   string
	}{
		{name: "booted (systemd 257)", out: "UserspaceTimestamp=Mon 2026-11-23 22:52:23.123456 UTC\nFinishTimestamp=Mon 2026-11-23 22:52:26.654321 UTC\n",
			want: hosts.BootTimes{Started: started, Finished: finished}},
		{name: "other order, other lines", out: "FinishTimestamp=Mon 2026-11-23 22:52:26.654321 UTC\nVersion=252.39\nUserspaceTimestamp=Mon 2026-11-23 22:52:23.123456 UTC",
			want: hosts.BootTimes{Started: started, Finished: finished}},
		{name: "still booting", out: "UserspaceTimestamp=Mon 2026-11-23 22:52:23.123456 UTC\nFinishTimestamp=\n",
			want: hosts.BootTimes{Started: started}},
		{name: "empty", out: "", wantErr: "no UserspaceTimestamp"},
		{name: "seconds only", out: "UserspaceTimestamp=Mon 2026-11-23 22:52:23 UTC\n", wantErr: "cannot parse UserspaceTimestamp"},
		{name: "garbage", out: "UserspaceTimestamp=Mon 2026-11-23 22:52:23.123456 UTC\nFinishTimestamp=soon\n", wantErr: "cannot parse FinishTimestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hosts.ParseBootTimes(tc.out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseBootTimes error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseBootTimes (-want +got):\n%s", d)
			}
		})
	}
	if d := (hosts.BootTimes{Started: started, Finished: finished}).Duration(); d != finished.Sub(started) {
		t.Errorf("Duration = %v, want %v", d, finished.Sub(started))
	}
	if d := (hosts.BootTimes{Started: started}).Duration(); d != 0 {
		t.Errorf("Duration while booting = %v, want 0", d)
	}
}

// FuzzParseBootTimes: no input panics, and formatted times read back as they were (to the
// microsecond).
func FuzzParseBootTimes(f *testing.F) {
	f.Add("UserspaceTimestamp=Mon 2026-11-23 22:52:23.123456 UTC\nFinishTimestamp=Mon 2026-11-23 22:52:26.654321 UTC\n", int64(1795000000123456))
	f.Add("FinishTimestamp=\n", int64(0))
	f.Add("=\n==\nUserspaceTimestamp=", int64(-5))
	f.Fuzz(func(t *testing.T, out string, us int64) {
		hosts.ParseBootTimes(out)
		if us < 0 || us > 253402300799000000 { // year 9999
			return
		}
		at := time.UnixMicro(us).UTC()
		got, err := hosts.ParseBootTimes("UserspaceTimestamp=" + hosts.FormatBootTime(at) + "\nFinishTimestamp=\n")
		if us == 0 {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !got.Started.Equal(at) || !got.Finished.IsZero() {
			t.Errorf("read back %v, want %v", got, at)
		}
	})
}
