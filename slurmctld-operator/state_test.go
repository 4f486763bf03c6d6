package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/juju/jujutest"
)

// stateWrites counts, with inotify, the files renamed into the state file's directory under
// the state file's name (slurmconf.WriteFile writes a temporary file and renames it) while
// fn runs. IN_CREATE of each temporary file is watched too: inotify merges an event with an
// identical unread one queued just before it, which two renames in a row would be.
func stateWrites(t *testing.T, c *Charm, fn func()) int {
	t.Helper()
	path := c.StateFile
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(path), syscall.IN_MOVED_TO|syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	fn()
	n := 0
	buf := make([]byte, 64*1024)
	for {
		r, err := syscall.Read(fd, buf)
		if err == syscall.EAGAIN {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= r; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			name = bytes.TrimRight(name, "\x00")
			if ev.Mask&syscall.IN_MOVED_TO != 0 && string(name) == filepath.Base(path) {
				n++
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func TestStateWrittenOncePerHook(t *testing.T) {
	e := newEnv(t)
	var out jujutest.State
	// The first configure hook changes the state (cluster name, key, status, record): once.
	if n := stateWrites(t, e.c, func() { out = e.started() }); n != 1 {
		t.Errorf("config-changed on a fresh controller wrote the state %d times, want 1", n)
	}
	// The same configuration again changes nothing: no write.
	if n := stateWrites(t, e.c, func() { out = e.run(out, jujutest.Hook(juju.ConfigChanged)) }); n != 0 {
		t.Errorf("unchanged config-changed wrote the state %d times, want 0", n)
	}
	// A relation joining changes the record and the apps: once.
	in := out
	in.Relations = append(in.Relations, relation("slurmd:1", "slurmd", nil, "slurmd/0"))
	if n := stateWrites(t, e.c, func() { e.run(in, jujutest.RelationHook(juju.RelationCreated, "slurmd:1", "")) }); n != 1 {
		t.Errorf("relation-created wrote the state %d times, want 1", n)
	}
}

// loadState reads the charm state as the lifecycle saved it.
func (c *Charm) loadState() (*charmState, error) {
	st := &charmState{}
	data, err := os.ReadFile(c.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, st)
}
