package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// The configuration files the charm manages (slurm.conf and one partition-<app>.conf per
// application) are never edited in place. confFiles.change copies them into a candidate directory
// beside them, lets the edit run there, makes Slurm's own parser read the candidate
// (slurm.CheckConfig), and installs the files that changed only when Slurm reads it. A
// candidate Slurm refuses leaves the live files, the running slurmctld and every other
// partition as they were.

// candidatePrefix names the candidate directories inside confDir (hidden from Slurm, which
// reads only the files slurm.conf names).
const candidatePrefix = ".candidate-"

// confFiles are the managed configuration files of one hook: the live ones, or the candidate
// copy while change runs an edit.
type confFiles struct {
	c *Charm
	// stage is the candidate directory while change runs an edit.
	stage string
	// installed: change installed files in this hook.
	installed bool
}

// path is the path of a managed configuration file (a name in confDir): in the candidate
// while change runs an edit, else the live one.
func (f *confFiles) path(name string) string {
	if f.stage != "" {
		return filepath.Join(f.stage, name)
	}
	return f.c.Path(filepath.Join(confDir, name))
}

// managedConf reports whether name is a file of confDir that the charm manages.
func managedConf(name string) bool {
	return name == "slurm.conf" || (strings.HasPrefix(name, "partition-") && strings.HasSuffix(name, ".conf"))
}

// change runs edit on a candidate copy of the managed configuration files and installs
// the result when edit changed something and Slurm's parser reads it. It reports whether the
// live files changed. A candidate Slurm refuses gives a *slurm.ConfigError and changes nothing.
// Nested calls edit the same candidate.
func (f *confFiles) change(ctx context.Context, edit func(ctx context.Context) (bool, error)) (bool, error) {
	if f.stage != "" {
		return edit(ctx)
	}
	live := f.c.Path(confDir)
	if err := os.MkdirAll(live, 0o755); err != nil {
		return false, fmt.Errorf("cannot create %s: %w", confDir, err)
	}
	sweepCandidates(live)
	dir, err := os.MkdirTemp(live, candidatePrefix)
	if err != nil {
		return false, fmt.Errorf("cannot create a candidate configuration: %w", err)
	}
	defer os.RemoveAll(dir)
	before, err := readManaged(live)
	if err != nil {
		return false, err
	}
	for name, data := range before {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return false, fmt.Errorf("cannot copy %s into the candidate configuration: %w", name, err)
		}
	}
	f.stage = dir
	changed, err := edit(ctx)
	f.stage = ""
	if err != nil || !changed {
		return false, err
	}
	after, err := readManaged(dir)
	if err != nil {
		return false, err
	}
	if sameFiles(before, after) {
		return false, nil
	}
	if err := f.c.client().CheckConfig(ctx, filepath.Join(dir, "slurm.conf")); err != nil {
		var ce *slurm.ConfigError
		if errors.As(err, &ce) {
			// Slurm names the candidate's files: name the live ones instead.
			ce.File = strings.Replace(ce.File, dir, confDir, 1)
			for i, m := range ce.Messages {
				ce.Messages[i] = strings.ReplaceAll(m, dir, confDir)
			}
		}
		return false, err
	}
	f.installed = true
	return true, installConf(ctx, live, before, after)
}

// installConf writes every file of after that differs from before into live (each
// atomically), then removes the managed files that after no longer has. A write that fails
// restores the files already written, so that the live directory is as before.
func installConf(ctx context.Context, live string, before, after map[string][]byte) error {
	var written []string
	restore := func(err error) error {
		for _, name := range written {
			path := filepath.Join(live, name)
			if old, ok := before[name]; ok {
				err = errors.Join(err, slurmconf.WriteFile(ctx, path, old, slurmconf.EditOptions{Mode: 0o644}))
			} else {
				err = errors.Join(err, os.Remove(path))
			}
		}
		return err
	}
	for _, name := range sortedKeys(after) {
		data := after[name]
		if old, ok := before[name]; ok && bytes.Equal(old, data) {
			continue
		}
		if err := slurmconf.WriteFile(ctx, filepath.Join(live, name), data, slurmconf.EditOptions{Mode: 0o644}); err != nil {
			return restore(fmt.Errorf("cannot write %s: %w", filepath.Join(confDir, name), err))
		}
		written = append(written, name)
	}
	for _, name := range sortedKeys(before) {
		if _, ok := after[name]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(live, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return restore(fmt.Errorf("cannot remove %s: %w", filepath.Join(confDir, name), err))
		}
	}
	return nil
}

// readManaged reads the managed configuration files of dir.
func readManaged(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", dir, err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !managedConf(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", e.Name(), err)
		}
		files[e.Name()] = data
	}
	return files, nil
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, data := range a {
		if other, ok := b[name]; !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

// sweepCandidates removes candidate directories a killed hook left behind.
func sweepCandidates(live string) {
	old, _ := filepath.Glob(filepath.Join(live, candidatePrefix+"*"))
	for _, dir := range old {
		_ = os.RemoveAll(dir)
	}
}

// refusal says in a status line what Slurm refused: the key and value it names, then its
// first message.
func refusal(ce *slurm.ConfigError) string { return ce.Refusal("Slurm") }
