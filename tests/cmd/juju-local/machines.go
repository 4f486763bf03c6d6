package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/model"
)

// baseMachines is the provisioner of a model on real hosts: Pebble hosts for units with no
// base, systemd-nspawn machines for debian@12, debian@13 and debian@14 from the images under
// build/images of the repository (the default base's image is built when missing).
func baseMachines(n *hosts.Network, dir, self, defaultBase string) (*model.BaseMachines, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	images := map[string]string{}
	root := findAbove(filepath.Join("scripts", "images.sh"))
	for _, base := range model.MachineBases() {
		suite, _ := model.ImageSuite(base)
		if root == "" {
			continue
		}
		img := filepath.Join(root, "build", "images", suite, "root")
		if _, err := os.Stat(filepath.Join(img, "sbin", "init")); err != nil && base == defaultBase {
			cmd := exec.Command(filepath.Join(root, "scripts", "images.sh"), suite)
			cmd.Dir = root
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("cannot build the %s image: %w", suite, err)
			}
		}
		if _, err := os.Stat(filepath.Join(img, "sbin", "init")); err == nil {
			images[base] = img
		}
	}
	if _, ok := images[defaultBase]; defaultBase != "" && !ok {
		return nil, fmt.Errorf("no image for base %q (build it with scripts/images.sh in the repository, or make images)", defaultBase)
	}
	return &model.BaseMachines{
		Network: n, Images: images, Default: defaultBase, CloseNetwork: true,
		Binds: []string{dir, filepath.Dir(self)},
	}, nil
}

// findAbove returns the nearest directory holding rel, above the working directory or else
// above the binary, or "".
func findAbove(rel string) string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for ; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, rel)); err == nil {
				return d
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return ""
}
