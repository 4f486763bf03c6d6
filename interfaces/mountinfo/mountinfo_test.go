package mountinfo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/charmed-slurm/operators/interfaces/mountinfo"
)

// libraryBag is what mount_info's MountRequires.set_mount_info writes for
// MountInfo(mountpoint="/srv/state", nosuid=True): ops' Relation.save, one json.dumps per field.
var libraryBag = map[string]string{
	"mountpoint": `"/srv/state"`, "noexec": "false", "nosuid": "true", "nodev": "false", "read_only": "false",
}

func TestEncodeIsWhatTheLibraryWrites(t *testing.T) {
	got, err := mountinfo.Info{Mountpoint: "/srv/state", NoSUID: true}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(libraryBag, got); d != "" {
		t.Errorf("bag (-library +ours):\n%s", d)
	}
}

func TestDecodeInfo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bag   map[string]string
		want  mountinfo.Info
		field string // the DataError's field; "" for success
		ready bool   // false: ErrNotReady
	}{
		{name: "library", bag: libraryBag, want: mountinfo.Info{Mountpoint: "/srv/state", NoSUID: true}, ready: true},
		{name: "mountpoint only", bag: map[string]string{"mountpoint": `"/mnt/x"`}, want: mountinfo.Info{Mountpoint: "/mnt/x"}, ready: true},
		{name: "all on", bag: map[string]string{"mountpoint": `"/a"`, "noexec": "true", "nosuid": "true", "nodev": "true", "read_only": "true"},
			want: mountinfo.Info{Mountpoint: "/a", NoExec: true, NoSUID: true, NoDev: true, ReadOnly: true}, ready: true},
		{name: "empty bag", bag: map[string]string{}},
		{name: "options without mountpoint", bag: map[string]string{"noexec": "false"}},
		{name: "empty mountpoint", bag: map[string]string{"mountpoint": ""}},
		{name: "empty JSON string", bag: map[string]string{"mountpoint": `""`}},
		{name: "not JSON", bag: map[string]string{"mountpoint": "/srv"}, field: "mountpoint", ready: true},
		{name: "trailing data", bag: map[string]string{"mountpoint": `"/srv" "/x"`}, field: "mountpoint", ready: true},
		{name: "relative", bag: map[string]string{"mountpoint": `"srv"`}, field: "mountpoint", ready: true},
		{name: "unclean", bag: map[string]string{"mountpoint": `"/srv/../etc"`}, field: "mountpoint", ready: true},
		{name: "root", bag: map[string]string{"mountpoint": `"/"`}, field: "mountpoint", ready: true},
		{name: "comma", bag: map[string]string{"mountpoint": `"/a,b"`}, field: "mountpoint", ready: true},
		{name: "space", bag: map[string]string{"mountpoint": `"/a b"`}, field: "mountpoint", ready: true},
		{name: "newline", bag: map[string]string{"mountpoint": `"/a\nb"`}, field: "mountpoint", ready: true},
		{name: "too long", bag: map[string]string{"mountpoint": `"/` + strings.Repeat("a", 4095) + `"`}, field: "mountpoint", ready: true},
		{name: "bool as string", bag: map[string]string{"mountpoint": `"/a"`, "noexec": `"true"`}, field: "noexec", ready: true},
		{name: "python bool", bag: map[string]string{"mountpoint": `"/a"`, "read_only": "True"}, field: "read_only", ready: true},
		{name: "unknown key", bag: map[string]string{"mountpoint": `"/a"`, "fstype": `"nfs"`}, field: "fstype", ready: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mountinfo.DecodeInfo(tc.bag)
			switch {
			case !tc.ready:
				if !errors.Is(err, mountinfo.ErrNotReady) {
					t.Fatalf("got %+v, %v; want ErrNotReady", got, err)
				}
			case tc.field != "":
				var de *mountinfo.DataError
				if !errors.As(err, &de) || de.Field != tc.field {
					t.Fatalf("got %+v, %v; want a DataError on %q", got, err, tc.field)
				}
				if got != (mountinfo.Info{}) {
					t.Errorf("a refused bag decoded partly: %+v", got)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("info (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestEncodeRefusesABadMountpoint(t *testing.T) {
	for _, mp := range []string{"", "rel", "/a/", "/a//b", "/", "/a,b", "/a\tb"} {
		_, err := mountinfo.Info{Mountpoint: mp}.Encode()
		var de *mountinfo.DataError
		if !errors.As(err, &de) || de.Field != "mountpoint" {
			t.Errorf("Encode(%q): got %v, want a DataError on mountpoint", mp, err)
		}
	}
}

func TestDecodeMounted(t *testing.T) {
	for _, tc := range []struct {
		bag  map[string]string
		want mountinfo.Mounted
		bad  bool
	}{
		{bag: map[string]string{"mounted": "true", "ingress-address": "10.0.0.2"}, want: mountinfo.IsMounted},
		{bag: map[string]string{"mounted": "false"}, want: mountinfo.NotMounted},
		{bag: map[string]string{"private-address": "10.0.0.2"}, want: mountinfo.Unreported},
		{bag: map[string]string{"mounted": "True"}, bad: true},
		{bag: map[string]string{"mounted": ""}, bad: true},
	} {
		got, err := mountinfo.DecodeMounted(tc.bag)
		var de *mountinfo.DataError
		if tc.bad != errors.As(err, &de) || got != tc.want {
			t.Errorf("DecodeMounted(%v) = %v, %v; want %v (refused: %v)", tc.bag, got, err, tc.want, tc.bad)
		}
	}
	if d := cmp.Diff(map[string]string{"mounted": "true"}, mountinfo.EncodeMounted(true)); d != "" {
		t.Error(d)
	}
}

func FuzzDecodeInfo(f *testing.F) {
	f.Add(`"/srv/state"`, "false", "true", "false", "false", "")
	f.Add(`"/a,b"`, "true", "", "x", "True", "k")
	f.Add(`"\u00e9/x"`, "1", "null", "false ", "false", "mountpoint")
	f.Add(`"/a\\u0000b"`, "", "", "", "", "")
	f.Fuzz(func(t *testing.T, mp, noexec, nosuid, nodev, ro, extra string) {
		bag := map[string]string{"mountpoint": mp, "noexec": noexec, "nosuid": nosuid, "nodev": nodev, "read_only": ro}
		if extra != "" {
			bag[extra] = "false"
		}
		info, err := mountinfo.DecodeInfo(bag)
		if err != nil {
			if info != (mountinfo.Info{}) {
				t.Fatalf("refused (%v) but decoded %+v", err, info)
			}
			return
		}
		again, err := info.Encode()
		if err != nil {
			t.Fatalf("accepted %+v but cannot encode it: %v", info, err)
		}
		back, err := mountinfo.DecodeInfo(again)
		if err != nil {
			t.Fatalf("re-decode of %v: %v", again, err)
		}
		if d := cmp.Diff(info, back); d != "" {
			t.Fatalf("re-decode differs:\n%s", d)
		}
	})
}

func FuzzDecodeMounted(f *testing.F) {
	f.Add("true")
	f.Add("false")
	f.Add("yes")
	f.Fuzz(func(t *testing.T, v string) {
		m, err := mountinfo.DecodeMounted(map[string]string{"mounted": v})
		if err != nil {
			if m != mountinfo.Unreported {
				t.Fatalf("refused %q but decoded %v", v, m)
			}
			return
		}
		back, err := mountinfo.DecodeMounted(mountinfo.EncodeMounted(m == mountinfo.IsMounted))
		if err != nil || back != m {
			t.Fatalf("%q: %v round-trips to %v, %v", v, m, back, err)
		}
	})
}
