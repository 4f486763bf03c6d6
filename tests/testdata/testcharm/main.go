// Command testcharm is the local model's test charm. Every hook and action it runs is recorded
// with a juju-log line "testcharm-hook <json>" holding the hook name and its JUJU_* environment,
// and it exercises the hook tools through libs/juju's clients:
//
//   - install opens 8080/tcp, sets version 1.2.3 and maintenance status; start sets active.
//   - every relation hook (but broken) writes "unit=<unit>", "greeting" and "last-hook" into the
//     unit databag; the leader writes "leader=<unit>" into the application databag, and a
//     non-leader tries and records the refusal in its unit databag ("app-write=refused").
//   - the leader of a "source" side creates a secret labelled "shared" (token=v1), grants it to
//     the relation when grant-secret is true and publishes its id as "secret-id"; the "sink"
//     side reads that secret on relation-changed and secret-changed and records the value
//     ("secret-token") or the error ("secret-error") in its unit databag.
//   - a hook named in config fail-hooks makes its writes (unit data "failed-write", port
//     9999/tcp) and then exits 1.
//   - a hook named in config slow-hooks ("name=duration,...") sleeps that long first; every
//     hook and action logs "testcharm-hook" with its start time ("t", Unix nanoseconds) and
//     "testcharm-done" with its end time, so that tests can check that hooks never overlap.
//   - on config-changed the leader publishes the secret again to every source relation (so that
//     granting it later reaches the sink side).
//   - on a machine that runs systemd, every hook records first the state of its Juju agent's
//     service ("agent": jujud-machine-<JUJU_MACHINE_ID>'s ActiveState: active, deactivating,
//     inactive, ...), what systemd said of the machine ("system": running, stopping, ...;
//     `systemctl is-system-running`) and the boot it ran in ("boot": the boot id), so that tests
//     can tell a hook started on a machine going down.
//   - actions: echo, fail, rotate (new secret revision), bad-key, tools, and run-tool, which
//     runs any hook tool (argv as a JSON list, optional stdin) and returns its stdout ("out"),
//     stderr ("err") and exit code ("code").
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/charm"
	"github.com/charmed-slurm/operators/libs/juju"
)

// main runs the hook through charm.Run, without charm.Main's signal handling: a SIGTERM ends
// the test charm at once, as it always has.
func main() {
	os.Exit(charm.Run(context.Background(), os.LookupEnv, juju.ExecRunner{}, os.Stderr, func(juju.Event) (juju.Handler, func(), error) {
		return handle, nil, nil
	}))
}

type config struct {
	FailHooks   string `json:"fail-hooks"`
	SlowHooks   string `json:"slow-hooks"`
	GrantSecret bool   `json:"grant-secret"`
	Greeting    string `json:"greeting"`
}

func handle(ctx context.Context, hc *juju.HookContext) error {
	ev := hc.Event
	agent, system, boot := systemState(ctx, ev.MachineID)
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "JUJU_") || k == "PATH") {
			env[k] = v
		}
	}
	wd, _ := os.Getwd()
	record := map[string]any{"hook": ev.Name, "env": env, "wd": wd, "t": time.Now().UnixNano()}
	if system != "" {
		record["agent"], record["system"], record["boot"] = agent, system, boot
	}
	if ev.Kind.IsRelation() {
		// What relation-ids and relation-list show during this hook.
		for key, argv := range map[string][]string{
			"ids":     {"relation-ids", ev.Endpoint, "--format=json"},
			"members": {"relation-list", "-r", string(ev.Relation), "--format=json"},
		} {
			res, err := hc.Runner.Run(ctx, juju.Command{Args: argv})
			if err != nil {
				return err
			}
			record[key] = strings.TrimSpace(string(res.Stdout)) + strings.TrimSpace(string(res.Stderr))
		}
	}
	rec, _ := json.Marshal(record)
	if err := hc.Log.Log(ctx, juju.LevelInfo, "testcharm-hook "+string(rec)); err != nil {
		return err
	}
	defer func() {
		done, _ := json.Marshal(map[string]any{"hook": ev.Name, "unit": ev.Unit, "t": time.Now().UnixNano()})
		_ = hc.Log.Log(ctx, juju.LevelInfo, "testcharm-done "+string(done))
	}()
	var cfg config
	if err := hc.Config.Decode(ctx, &cfg); err != nil {
		return err
	}
	if d, err := slowFor(cfg.SlowHooks, ev.Name); err != nil {
		return err
	} else if d > 0 {
		time.Sleep(d)
	}
	if ev.Kind == juju.Action {
		return action(ctx, hc)
	}
	leader, err := hc.Leadership.IsLeader(ctx)
	if err != nil {
		return err
	}
	switch ev.Kind {
	case juju.Install:
		if err := hc.Ports.Open(ctx, juju.Port{Number: 8080, Protocol: "tcp"}); err != nil {
			return err
		}
		if _, err := hc.Runner.Run(ctx, juju.Command{Args: []string{"application-version-set", "1.2.3"}}); err != nil {
			return err
		}
		if err := hc.Status.SetUnit(ctx, juju.StatusMaintenance, "installing"); err != nil {
			return err
		}
	case juju.Start:
		if err := hc.Status.SetUnit(ctx, juju.StatusActive, "started"); err != nil {
			return err
		}
	case juju.ConfigChanged:
		if leader {
			ids, err := hc.Relations.IDs(ctx, "source")
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := publishSecret(ctx, hc, cfg, id); err != nil {
					return err
				}
			}
		}
	case juju.RelationCreated, juju.RelationJoined, juju.RelationChanged, juju.RelationDeparted:
		if err := relation(ctx, hc, cfg, leader); err != nil {
			return err
		}
	case juju.SecretRemove:
		// A well-behaved owner removes the revision no consumer tracks any more.
		if err := hc.Secrets.Remove(ctx, ev.SecretID, ev.SecretRevision); err != nil {
			return err
		}
	case juju.SecretChanged:
		content, err := hc.Secrets.Get(ctx, ev.SecretID, juju.SecretGetOptions{Refresh: true})
		if err != nil {
			return err
		}
		ids, err := hc.Relations.IDs(ctx, "sink")
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := hc.Relations.SetUnitData(ctx, id, map[string]string{"secret-token": content["token"]}); err != nil {
				return err
			}
		}
	}
	if slices.Contains(strings.Split(cfg.FailHooks, ","), ev.Name) {
		if ev.Relation != "" && ev.Kind != juju.RelationBroken {
			if err := hc.Relations.SetUnitData(ctx, ev.Relation, map[string]string{"failed-write": ev.Name}); err != nil {
				return err
			}
		}
		if err := hc.Ports.Open(ctx, juju.Port{Number: 9999, Protocol: "tcp"}); err != nil {
			return err
		}
		return fmt.Errorf("failing %s on purpose", ev.Name)
	}
	return nil
}

// systemState is the ActiveState of the agent's service of machine machineID, what systemd says
// of the machine (`systemctl is-system-running`: it exits non-zero for every state but running,
// its output is the state) and the machine's boot id; empty on a machine without systemd
// (sd_booted: no /run/systemd/system).
func systemState(ctx context.Context, machineID string) (agent, system, boot string) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return "", "", ""
	}
	a, _ := exec.CommandContext(ctx, "systemctl", "show", "--property=ActiveState", "--value", "jujud-machine-"+machineID).Output()
	s, _ := exec.CommandContext(ctx, "systemctl", "is-system-running").Output()
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(a)), strings.TrimSpace(string(s)), strings.TrimSpace(string(id))
}

func relation(ctx context.Context, hc *juju.HookContext, cfg config, leader bool) error {
	ev := hc.Event
	data := map[string]string{"unit": ev.Unit, "greeting": cfg.Greeting, "last-hook": ev.Name}
	if !leader {
		err := hc.Relations.SetAppData(ctx, ev.Relation, map[string]string{"leader": ev.Unit})
		var te *juju.HookToolError
		if errors.As(err, &te) {
			data["app-write"] = "refused"
		} else if err == nil {
			data["app-write"] = "allowed"
		} else {
			return err
		}
	}
	if ev.Endpoint == "sink" && ev.RemoteApp != "" {
		app, err := hc.Relations.AppData(ctx, ev.Relation, ev.RemoteApp)
		if err != nil {
			return err
		}
		if id := app["secret-id"]; id != "" {
			content, err := hc.Secrets.Get(ctx, juju.SecretID(id), juju.SecretGetOptions{})
			var te *juju.HookToolError
			switch {
			case errors.As(err, &te):
				data["secret-error"] = strings.TrimSpace(te.Stderr)
				data["secret-token"] = ""
			case err != nil:
				return err
			default:
				data["secret-token"] = content["token"]
				data["secret-error"] = ""
			}
		}
	}
	if err := hc.Relations.SetUnitData(ctx, ev.Relation, data); err != nil {
		return err
	}
	if !leader {
		return nil
	}
	if err := hc.Relations.SetAppData(ctx, ev.Relation, map[string]string{"leader": ev.Unit}); err != nil {
		return err
	}
	if ev.Endpoint == "source" {
		return publishSecret(ctx, hc, cfg, ev.Relation)
	}
	return nil
}

// publishSecret makes sure the "shared" secret exists, grants it to rel when grant-secret is
// true, and publishes its id and the grant in rel's application databag.
func publishSecret(ctx context.Context, hc *juju.HookContext, cfg config, rel juju.RelationID) error {
	id, err := sharedSecret(ctx, hc)
	if err != nil {
		return err
	}
	if cfg.GrantSecret {
		if err := hc.Secrets.Grant(ctx, id, rel, ""); err != nil {
			return err
		}
	}
	return hc.Relations.SetAppData(ctx, rel, map[string]string{"secret-id": string(id), "granted": fmt.Sprint(cfg.GrantSecret)})
}

// sharedSecret returns the leader's "shared" secret, creating it on first use.
func sharedSecret(ctx context.Context, hc *juju.HookContext) (juju.SecretID, error) {
	info, err := hc.Secrets.InfoByLabel(ctx, "shared")
	if err == nil {
		return info.ID, nil
	}
	var te *juju.HookToolError
	if !errors.As(err, &te) {
		return "", err
	}
	return hc.Secrets.Add(ctx, map[string]string{"token": "v1"}, juju.SecretAddOptions{Label: "shared"})
}

func action(ctx context.Context, hc *juju.HookContext) error {
	var params map[string]any
	if err := hc.Actions.Params(ctx, &params); err != nil {
		return err
	}
	switch hc.Event.Name {
	case "echo":
		if err := hc.Actions.Log(ctx, "echoing"); err != nil {
			return err
		}
		return hc.Actions.Set(ctx, map[string]string{"echo.message": fmt.Sprint(params["message"]), "result": "ok"})
	case "fail":
		return hc.Actions.Fail(ctx, fmt.Sprint(params["message"]))
	case "rotate":
		info, err := hc.Secrets.InfoByLabel(ctx, "shared")
		if err != nil {
			return err
		}
		if err := hc.Secrets.Set(ctx, info.ID, map[string]string{"token": fmt.Sprint(params["token"])}, juju.SecretSetOptions{}); err != nil {
			return err
		}
		return hc.Actions.Set(ctx, map[string]string{"revision": fmt.Sprint(info.Revision + 1)})
	case "bad-key":
		err := hc.Actions.Set(ctx, map[string]string{"Bad_Key": "x"})
		var te *juju.HookToolError
		if !errors.As(err, &te) {
			return fmt.Errorf("action-set Bad_Key=x: want a hook tool error, got %v", err)
		}
		return hc.Actions.Set(ctx, map[string]string{"error": strings.TrimSpace(te.Stderr), "exit-code": fmt.Sprint(te.ExitCode)})
	case "clients":
		return clients(ctx, hc)
	case "typed":
		js, err := json.Marshal(params)
		if err != nil {
			return err
		}
		return hc.Actions.Set(ctx, map[string]string{"params": string(js)})
	case "revoke":
		info, err := hc.Secrets.InfoByLabel(ctx, "shared")
		if err != nil {
			return err
		}
		ids, err := hc.Relations.IDs(ctx, "source")
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := hc.Secrets.Revoke(ctx, info.ID, id); err != nil {
				return err
			}
		}
		return hc.Actions.Set(ctx, map[string]string{"revoked": fmt.Sprint(len(ids))})
	case "run-tool":
		var argv []string
		if err := json.Unmarshal([]byte(fmt.Sprint(params["argv"])), &argv); err != nil || len(argv) == 0 {
			return fmt.Errorf("argv must be a JSON list of strings: %v", err)
		}
		var stdin []byte
		if s, ok := params["stdin"].(string); ok && s != "" {
			stdin = []byte(s)
		}
		res, err := hc.Runner.Run(ctx, juju.Command{Args: argv, Stdin: stdin})
		if err != nil {
			return err
		}
		return hc.Actions.Set(ctx, map[string]string{"out": string(res.Stdout), "err": string(res.Stderr), "code": fmt.Sprint(res.ExitCode)})
	case "tools":
		results := map[string]string{}
		for _, argv := range [][]string{
			{"is-leader", "--format=json"},
			{"config-get", "--all", "--format=json"},
			{"config-get", "count", "--format=json"},
			{"relation-ids", "source", "--format=json"},
			{"relation-ids", "peer", "--format=json"},
			{"network-get", "source", "--format=json"},
			{"unit-get", "private-address"},
			{"opened-ports", "--format=json"},
			{"status-get", "--include-data", "--format=json"},
			{"secret-ids", "--format=json"},
		} {
			res, err := hc.Runner.Run(ctx, juju.Command{Args: argv})
			if err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("%v: exit %d: %s", argv, res.ExitCode, res.Stderr)
			}
			results[argv[0]+"."+strings.TrimPrefix(strings.Join(argv[1:len(argv)-1], "-"), "--")] = strings.TrimSpace(string(res.Stdout))
		}
		return hc.Actions.Set(ctx, keysSafe(results))
	}
	return juju.ErrNoHandler
}

// keysSafe turns tool invocations into valid action-set keys.
func keysSafe(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		k = strings.Trim(strings.NewReplacer(".", "-", "--", "-").Replace(k), "-")
		out[k] = v
	}
	return out
}

// clients exercises libs/juju's read clients and a unit-owned secret's life, returning what
// they decoded.
func clients(ctx context.Context, hc *juju.HookContext) error {
	res := map[string]string{}
	ingress, err := hc.Network.IngressAddress(ctx, "source")
	if err != nil {
		return err
	}
	res["ingress"] = ingress
	info, err := hc.Network.Get(ctx, "source")
	if err != nil {
		return err
	}
	if len(info.BindAddresses) == 0 || len(info.BindAddresses[0].Addresses) == 0 {
		return fmt.Errorf("network-get: no bind address in %+v", info)
	}
	res["bind"] = info.BindAddresses[0].Addresses[0].Value
	priv, err := hc.Network.PrivateAddress(ctx)
	if err != nil {
		return err
	}
	res["private"] = priv
	st, err := hc.Status.Unit(ctx)
	if err != nil {
		return err
	}
	res["unit-status"] = string(st.Code) + " " + st.Message
	app, err := hc.Status.App(ctx)
	if err != nil {
		return err
	}
	res["app-units"] = fmt.Sprint(len(app.Units))
	ports, err := hc.Ports.Opened(ctx)
	if err != nil {
		return err
	}
	res["ports"] = fmt.Sprint(ports)
	ids, err := hc.Relations.IDs(ctx, "source")
	if err != nil {
		return err
	}
	for _, id := range ids {
		units, err := hc.Relations.Units(ctx, id)
		if err != nil {
			return err
		}
		remote, err := hc.Relations.RemoteApp(ctx, id)
		if err != nil {
			return err
		}
		res["remote"] = remote + " " + strings.Join(units, ",")
	}
	shared, err := hc.Secrets.InfoByLabel(ctx, "shared")
	if err != nil {
		return err
	}
	res["shared"] = fmt.Sprintf("%s rev %d owner %s", shared.Label, shared.Revision, shared.Owner)
	mine, err := hc.Secrets.Add(ctx, map[string]string{"value": "x"}, juju.SecretAddOptions{Label: "mine", Owner: "unit"})
	if err != nil {
		return err
	}
	owned, err := hc.Secrets.IDs(ctx)
	if err != nil {
		return err
	}
	res["owned"] = fmt.Sprint(len(owned))
	if err := hc.Secrets.Remove(ctx, mine, 0); err != nil {
		return err
	}
	if _, err := hc.Secrets.Info(ctx, mine); err == nil {
		return fmt.Errorf("secret %s still there after secret-remove", mine)
	}
	return hc.Actions.Set(ctx, res)
}

// slowFor is how long hook sleeps according to slow-hooks ("name=duration,...").
func slowFor(slow, hook string) (time.Duration, error) {
	for _, f := range strings.Split(slow, ",") {
		name, d, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok || name != hook {
			continue
		}
		return time.ParseDuration(d)
	}
	return 0, nil
}
