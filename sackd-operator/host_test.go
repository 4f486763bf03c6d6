package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/servicetest"
	"github.com/charmed-slurm/operators/libs/slurm/slurmtest"
)

// host is the login machine the charm runs on, with the cluster as sackd sees it: dpkg and apt
// answer from the packages set here (as the real tools print, libs/apt's recordings), sackd
// (started through the services fake) fetches the controller's configuration into /run/slurm
// when its key is the cluster's and a controller it was given answers, as real sackd does (it
// keeps running and retries otherwise), and sinfo answers through it with Slurm 24.11's
// recorded outputs. Every command is recorded.
type host struct {
	root string
	mu   sync.Mutex
	// calls are the commands run, argv joined by spaces.
	calls []string
	// installed maps a package to its installed version; candidates to what apt offers.
	installed, candidates map[string]string
	// clusterKey is the cluster's key; controllers are the controllers that answer; conf is
	// the configuration they serve now.
	clusterKey  []byte
	controllers []string
	conf        string
	// sackdConf is the configuration the running sackd fetched ("" when none).
	sackdConf string
	svc       *servicetest.Manager
}

func newHost(root string) *host {
	h := &host{
		root:        root,
		installed:   map[string]string{"sackd": "24.11.5-4+deb13u1", "slurm-client": "24.11.5-4+deb13u1"},
		candidates:  map[string]string{},
		clusterKey:  key1,
		controllers: []string{"10.0.0.1:6817"},
		conf:        "ClusterName=test\n",
	}
	h.svc = servicetest.New()
	h.svc.OnStart(func(spec service.Spec) (bool, error) {
		if spec.Name != SackdService {
			return true, nil
		}
		return true, h.sackdStarted(spec)
	})
	h.svc.OnStop(func(spec service.Spec) {
		if spec.Name == SackdService {
			h.sackdStopped()
		}
	})
	return h
}

// packaged is Debian's sackd package as it installs itself: its unit enabled and started.
func (h *host) packaged() {
	ctx := context.Background()
	for _, err := range []error{
		h.svc.Configure(ctx, service.Spec{Name: SackdService, Command: []string{SackdPath, "--systemd"}, User: SlurmUser}),
		h.svc.Enable(ctx, SackdService),
		h.svc.Start(ctx, SackdService),
	} {
		if err != nil {
			panic(err)
		}
	}
	h.svc.ResetCalls()
}

// lookPath finds the programs of the installed packages.
func (h *host) lookPath(name string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range packages {
		if n.Binary == name && h.installed[n.Package] != "" {
			return "/usr/sbin/" + name, nil
		}
	}
	return "", errors.New("exec: " + name + ": executable file not found in $PATH")
}

// sackdStarted is sackd starting as spec says: it serves its socket, and fetches the
// configuration when its key is the cluster's and one of its controllers answers.
func (h *host) sackdStarted(spec service.Spec) error {
	var servers []string // none: the packaged unit's sackd, which looks in DNS and finds none
	if i := slices.Index(spec.Command, "--conf-server"); i >= 0 && i+1 < len(spec.Command) {
		servers = strings.Split(spec.Command[i+1], ",")
	}
	key, _ := os.ReadFile(filepath.Join(h.root, KeyFile))
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(h.root, RunConfDir), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.root, SackSocket), nil, 0o777); err != nil {
		return err
	}
	reachable := slices.ContainsFunc(servers, func(s string) bool { return slices.Contains(h.controllers, s) })
	if !bytes.Equal(key, h.clusterKey) || !reachable {
		return nil // "Failed to load configs from slurmctld. Retrying in 10 seconds."
	}
	h.sackdConf = h.conf
	return os.WriteFile(filepath.Join(h.root, RunConf), []byte(h.conf), 0o644)
}

// sackdStopped: systemd removes the runtime directory (RuntimeDirectory=slurm).
func (h *host) sackdStopped() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sackdConf = ""
	os.RemoveAll(filepath.Join(h.root, RunDir))
}

// restartController is a controller restart with conf: sackd keeps what it fetched.
func (h *host) restartController(conf string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conf = conf
}

// rotateKey is the controller's key rotation: its new key.
func (h *host) rotateKey(key []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clusterKey = key
}

// fetched is the configuration the running sackd has.
func (h *host) fetched() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sackdConf
}

// commands are the commands run so far whose argv starts with prefix.
func (h *host) commands(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for _, c := range h.calls {
		if strings.HasPrefix(c, prefix) {
			got = append(got, c)
		}
	}
	return got
}

// Run implements command.Runner.
func (h *host) Run(ctx context.Context, argv []string, env []string) (command.Output, error) {
	h.mu.Lock()
	h.calls = append(h.calls, strings.Join(argv, " "))
	h.mu.Unlock()
	if argv[0] == "sinfo" {
		return h.sinfo(argv, env), nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch argv[0] {
	case "dpkg-query":
		pkg := argv[len(argv)-1]
		v := h.installed[pkg]
		if v == "" {
			return command.Output{Stderr: []byte("dpkg-query: no packages found matching " + pkg + "\n"), ExitCode: 1}, nil
		}
		return command.Output{Stdout: []byte("ii |" + v + "\n")}, nil
	case "apt-cache":
		pkg := argv[len(argv)-1]
		v := h.candidates[pkg]
		if v == "" {
			return command.Output{}, nil // apt prints nothing for a package it does not know
		}
		return command.Output{Stdout: []byte(pkg + ":\n  Installed: (none)\n  Candidate: " + v + "\n  Version table:\n")}, nil
	case "apt-get":
		if argv[1] == "install" {
			for _, pkg := range argv[4:] {
				if h.candidates[pkg] == "" {
					return command.Output{Stderr: []byte("E: Unable to locate package " + pkg + "\n"), ExitCode: 100}, nil
				}
				h.installed[pkg] = h.candidates[pkg]
			}
		}
		return command.Output{}, nil
	}
	return command.Output{}, fmt.Errorf("host: unexpected command %q", argv)
}

// sinfo answers as real sinfo on a login node: it needs the configuration sackd fetched and
// sackd's socket (Slurm 24.11's recorded outputs).
func (h *host) sinfo(argv, env []string) command.Output {
	conf := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SLURM_CONF="); ok {
			conf = v
		}
	}
	if _, err := os.Stat(filepath.Join(h.root, conf)); conf == "" || err != nil {
		return command.Output{Stderr: []byte("sinfo: error: s_p_parse_file: cannot stat file " + conf + ": No such file or directory, retrying in 1sec up to 60sec\nsinfo: fatal: Unable to process configuration file\n"), ExitCode: 1}
	}
	rec := slurmtest.Real2411("login-sinfo")
	if !slices.Equal(argv, rec.Argv) {
		return command.Output{Stderr: []byte(fmt.Sprintf("host: unrecorded sinfo %q", argv)), ExitCode: 2}
	}
	if _, err := os.Stat(filepath.Join(h.root, SackSocket)); err != nil || !h.svc.Active(SackdService) {
		return slurmtest.Real2411("login-no-sack").Output
	}
	return rec.Output
}
