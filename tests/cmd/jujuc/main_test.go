package main

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// files is a readFile over a map: a missing name is fs.ErrNotExist.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if c, ok := m[p]; ok {
			return []byte(c), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestToolInput(t *testing.T) {
	read := files(map[string]string{"/tmp/data.yaml": "a: 1\n", "/run/token": "s3cret"})
	for _, tt := range []struct {
		name      string
		args      []string
		stdin     string
		want      []string
		wantInput string
		wantErr   string
	}{
		{name: "plain", args: []string{"-r", "slurmd:0", "--app", "key=v"}, want: []string{"-r", "slurmd:0", "--app", "key=v"}},
		{name: "--file path", args: []string{"--app", "--file", "/tmp/data.yaml"}, want: []string{"--app", "--file", "-"}, wantInput: "a: 1\n"},
		{name: "--file=path", args: []string{"--file=/tmp/data.yaml", "--app"}, want: []string{"--file=-", "--app"}, wantInput: "a: 1\n"},
		{name: "--file -", args: []string{"--file", "-"}, stdin: "from stdin", want: []string{"--file", "-"}, wantInput: "from stdin"},
		{name: "secret value from a file", args: []string{"token#file=/run/token", "user=root"}, want: []string{"token=s3cret", "user=root"}},
		{name: "after --, nothing is read", args: []string{"--", "--file", "/nope", "k#file=/nope"}, want: []string{"--", "--file", "/nope", "k#file=/nope"}},
		{name: "a flag with #file= is not a secret value", args: []string{"--label=a#file=b"}, want: []string{"--label=a#file=b"}},
		{name: "--file last, no path", args: []string{"--file"}, want: []string{"--file"}},
		{name: "missing --file", args: []string{"--file", "/nope"}, wantErr: "cannot read --file"},
		{name: "missing secret file", args: []string{"token#file=/nope"}, wantErr: `cannot read secret value for "token"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, input, err := toolInput(tt.args, read, strings.NewReader(tt.stdin))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("error %v, want %q wrapping fs.ErrNotExist", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("arguments (-want +got):\n%s", d)
			}
			if string(input) != tt.wantInput {
				t.Errorf("input %q, want %q", input, tt.wantInput)
			}
		})
	}
}

// FuzzToolInput: whatever the arguments, toolInput never grows them, leaves arguments that
// name no file as they are, and sends as input only what it read.
func FuzzToolInput(f *testing.F) {
	for _, s := range []string{"--file\x00/f", "--file=/f", "k#file=/f\x00--\x00--file", "--file\x00-", "-r\x00slurmd:0\x00x=y", "a#file=\x00--file="} {
		f.Add(s, "content")
	}
	f.Fuzz(func(t *testing.T, joined, content string) {
		args := strings.Split(joined, "\x00")
		read := func(p string) ([]byte, error) {
			if p == "/missing" {
				return nil, fs.ErrNotExist
			}
			return []byte(content), nil
		}
		out, input, err := toolInput(args, read, strings.NewReader(content))
		if err != nil {
			return
		}
		if len(out) > len(args) {
			t.Fatalf("%q became %q: more arguments", args, out)
		}
		if len(input) > 0 && string(input) != content {
			t.Fatalf("input %q is not what was read", input)
		}
		names := slices.ContainsFunc(args, func(a string) bool {
			return a == "--file" || strings.HasPrefix(a, "--file=") || strings.Contains(a, "#file=")
		})
		if !names && !slices.Equal(out, args) {
			t.Fatalf("%q, naming no file, became %q", args, out)
		}
	})
}
