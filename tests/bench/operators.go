package bench

import (
	"github.com/charmed-slurm/operators/tests/bench/fake"

	"fmt"
	"os"
	"path/filepath"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"gopkg.in/yaml.v3"
)

// benchSecret is the auth secret's id in the fixtures.
const benchSecret = "secret:d3b5s2fmp25c7bench01"

// slurmCommands are the stubbed commands' answers: real Slurm 22.05.8 outputs of this machine's
// kind (see libs/slurm/slurmtest/real).
func slurmCommands() []fake.Command {
	const node = "NodeName=slurmd-0 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.40 AvailableFeatures=slurmd ActiveFeatures=slurmd Gres=(null) NodeAddr=10.203.0.11 NodeHostName=slurmd-0 Version=22.05.8 OS=Linux 6.1 #1 SMP @0  RealMemory=1000 AllocMem=0 FreeMem=23622 Sockets=1 Boards=1 State=IDLE+DYNAMIC_NORM ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=slurmd  BootTime=2026-11-22T22:10:48 SlurmdStartTime=2026-11-22T22:19:28 LastBusyTime=2026-11-22T22:19:28 CfgTRES=cpu=1,mem=1000M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
	version := "slurm 22.05.8\n"
	return []fake.Command{
		{Argv: []string{"slurmd", "-V"}, Stdout: version},
		{Argv: []string{"slurmctld", "-V"}, Stdout: version},
		{Argv: []string{"scontrol", "-V"}, Stdout: version},
		{Argv: []string{"scontrol", "--version"}, Stdout: version},
		{Argv: []string{"sinfo", "-V"}, Stdout: version},
		{Argv: []string{"slurmd", "-C"}, Stdout: "NodeName=bench CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\nUpTime=0-00:22:00\n"},
		{Argv: []string{"scontrol", "ping"}, Stdout: "Slurmctld(primary) at slurmctld-0 is UP\n"},
		{Argv: []string{"scontrol", "show", "node"}, Stdout: node},
		{Argv: []string{"scontrol", "show", "nodes"}, Stdout: node},
	}
}

// configDefaults returns the defaults of a charm's config options from its charmcraft.yaml.
func configDefaults(charmDir string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(charmDir, "charmcraft.yaml"))
	if err != nil {
		return nil, err
	}
	var ch struct {
		Config struct {
			Options map[string]struct {
				Default any `yaml:"default"`
			} `yaml:"options"`
		} `yaml:"config"`
	}
	if err := yaml.Unmarshal(data, &ch); err != nil {
		return nil, fmt.Errorf("cannot read %s/charmcraft.yaml: %w", charmDir, err)
	}
	cfg := map[string]any{}
	for k, o := range ch.Config.Options {
		if o.Default != nil {
			cfg[k] = o.Default
		}
	}
	return cfg, nil
}

// OperatorHooks returns the two operators with their common hooks and fixtures: slurmctld/0
// (leader) related to application slurmd, and slurmd/0 (leader) related to slurmctld; root is
// the repository root (for the charms' charmcraft.yaml), dispatch maps a charm name to its
// built binary.
func OperatorHooks(root string, dispatch map[string]string) ([]Operator, error) {
	key := make([]byte, 1024)
	for i := range key {
		key[i] = byte(i * 7)
	}
	secrets := map[string]map[string]string{benchSecret: slurmd.EncodeAuthSecret(key, "1")}
	compute, err := slurmd.NewComputeData("slurmd", nil)
	if err != nil {
		return nil, err
	}
	bag, err := slurmd.ControllerBag{Controllers: []string{"10.203.0.10:6817"}, AuthSecretID: benchSecret, ClusterName: "bench"}.Encode()
	if err != nil {
		return nil, err
	}
	var ops []Operator
	for _, c := range []struct {
		name, unit, endpoint, remoteApp, remoteUnit string
		data                                        map[string]map[string]string
	}{
		{"slurmctld", "slurmctld/0", slurmd.RequirerEndpoint, "slurmd", "slurmd/0", map[string]map[string]string{"slurmd": compute.Encode(), "slurmd/0": {}}},
		{"slurmd", "slurmd/0", slurmd.ProviderEndpoint, "slurmctld", "slurmctld/0", map[string]map[string]string{"slurmctld": bag, "slurmctld/0": {}}},
	} {
		bin, ok := dispatch[c.name]
		if !ok {
			continue
		}
		cfg, err := configDefaults(filepath.Join(root, c.name+"-operator"))
		if err != nil {
			return nil, err
		}
		rel := c.endpoint + ":1"
		relEnv := func(remote bool) map[string]string {
			env := map[string]string{"JUJU_RELATION": c.endpoint, "JUJU_RELATION_ID": rel, "JUJU_REMOTE_APP": c.remoteApp}
			if remote {
				env["JUJU_REMOTE_UNIT"] = c.remoteUnit
			}
			return env
		}
		op := Operator{
			Name: c.name, Unit: c.unit, Dispatch: bin,
			Fixture: fake.Fixture{
				Leader: true, Config: cfg, Ingress: "10.203.0.10",
				Relations: []fake.Relation{{ID: rel, Endpoint: c.endpoint, RemoteApp: c.remoteApp, Units: []string{c.remoteUnit}, Data: c.data}},
				Secrets:   secrets, Labels: map[string]string{"auth-key": benchSecret},
				Commands: slurmCommands(),
			},
			Hooks: []Hook{
				{Name: "install"}, {Name: "leader-elected"}, {Name: "config-changed"}, {Name: "start"},
				{Name: c.endpoint + "-relation-created", Env: relEnv(false)},
				{Name: c.endpoint + "-relation-joined", Env: relEnv(true)},
				{Name: c.endpoint + "-relation-changed", Env: relEnv(true)},
				{Name: "update-status"},
			},
		}
		if c.name == "slurmd" {
			// What the (stubbed) slurmd leaves once it fetched its configuration.
			conf := "ClusterName=bench\nSlurmctldHost=slurmctld-0(10.203.0.10)\nAuthType=auth/munge\n"
			op.Files = map[string]string{"/var/spool/slurmd/conf-cache/slurm.conf": conf, "/run/slurm/conf/slurm.conf": conf}
			op.Hooks = append(op.Hooks, Hook{Name: "secret-changed", Env: map[string]string{"JUJU_SECRET_ID": benchSecret, "JUJU_SECRET_LABEL": "", "JUJU_SECRET_REVISION": "2"}})
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operator binary given")
	}
	return ops, nil
}
