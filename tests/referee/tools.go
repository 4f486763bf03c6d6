package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/rpc"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/juju/cmd/v3"
	"github.com/juju/utils/v3/exec"

	"github.com/charmed-slurm/operators/tests/model"
	"github.com/juju/juju/internal/worker/uniter/runner/jujuc"
	"github.com/juju/juju/juju/sockets"
)

type (
	request = model.RefereeRequest
	reply   = model.RefereeReply
)

func base64Encode(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// toolReplayer runs Juju's jujuc server on a unix socket; each call is replayed through it
// with the hook context of the call being judged.
type toolReplayer struct {
	dir    string
	srv    *jujuc.Server
	client *rpc.Client
	cur    *hookContext
}

func newToolReplayer() (*toolReplayer, error) {
	dir, err := os.MkdirTemp("", "rf-referee")
	if err != nil {
		return nil, err
	}
	r := &toolReplayer{dir: dir}
	sock := sockets.Socket{Network: "unix", Address: filepath.Join(dir, "jujuc.sock")}
	getCmd := func(_, name string) (cmd.Command, error) { return jujuc.NewCommand(r.cur, name) }
	if r.srv, err = jujuc.NewServer(getCmd, sock, ""); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go r.srv.Run()
	if r.client, err = rpc.Dial("unix", sock.Address); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *toolReplayer) close() {
	if r.client != nil {
		r.client.Close()
	}
	r.srv.Close()
	os.RemoveAll(r.dir)
}

// run calls Juju's server as Juju's jujuc client (cmd/jujuc) does: without stdin first, and
// again with it when the command asks for it.
func (r *toolReplayer) run(call *model.ToolCall) (exec.ExecResponse, error) {
	req := jujuc.Request{ContextId: "referee", Dir: "/", CommandName: filepath.Base(call.Argv[0]), Args: call.Argv[1:]}
	var resp exec.ExecResponse
	err := r.client.Call("Jujuc.Main", req, &resp)
	if err != nil && err.Error() == jujuc.ErrNoStdin.Error() {
		req.StdinSet, req.Stdin = true, call.Stdin
		resp = exec.ExecResponse{}
		err = r.client.Call("Jujuc.Main", req, &resp)
	}
	return resp, err
}

// judge replays call through Juju's hook tools and returns how Juju's result differs from
// the model's ("" when it does not): stdout, stderr, exit code, and the state written.
func (r *toolReplayer) judge(call *model.ToolCall) (diff string) {
	var logs []string
	s := cloneState(call.Before)
	r.cur = &hookContext{s: s, call: call, logs: &logs, failed: call.ActionFailed[0], message: call.ActionMessage[0]}
	defer func() {
		if p := recover(); p != nil {
			diff = describe(call, fmt.Sprintf("Juju's command needs a context method the referee does not play: %v", p))
		}
	}()
	resp, err := r.run(call)
	if err != nil {
		return describe(call, fmt.Sprintf("Juju's jujuc server refused the call: %v", err))
	}
	type result struct {
		Stdout, Stderr string
		Code           int
		Log            []string
		ActionFailed   bool
		ActionMessage  string
		State          written
	}
	name := filepath.Base(call.Argv[0])
	juju := result{unordered(name, string(resp.Stdout)), string(resp.Stderr), resp.Code, logs, r.cur.failed, r.cur.message, project(s)}
	mdl := result{unordered(name, call.Stdout), call.Stderr, call.Code, modelLogs(call.Log), call.ActionFailed[1], call.ActionMessage[1], project(call.After)}
	if d := cmp.Diff(juju, mdl, cmpopts.EquateEmpty()); d != "" {
		return describe(call, "(-juju +model):\n"+d)
	}
	return ""
}

// unordered sorts the output of a tool whose list Juju prints in map order (secret-ids ranges
// over a map of secret metadata), so that only what is listed is compared.
func unordered(tool, stdout string) string {
	if tool != "secret-ids" {
		return stdout
	}
	var ids []string
	if err := json.Unmarshal([]byte(stdout), &ids); err == nil {
		slices.Sort(ids)
		data, _ := json.Marshal(ids)
		return string(data) + "\n"
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

func describe(call *model.ToolCall, what string) string {
	argv := make([]string, len(call.Argv))
	for i, a := range call.Argv {
		if len(a) > 60 {
			a = a[:60] + "…"
		}
		argv[i] = a
	}
	return fmt.Sprintf("hook tool %q in %s %s: %s", argv, call.Unit, call.Hook.Name(), what)
}

// modelLogs is the model's debug-log lines without their time, as the referee writes them.
func modelLogs(lines []string) []string {
	var out []string
	for _, l := range lines {
		prefix, rest, ok := strings.Cut(l, ": ")
		if ok {
			if _, after, ok := strings.Cut(rest, " "); ok {
				l = prefix + ": " + after
			}
		}
		out = append(out, l)
	}
	return out
}

// written is what hook tools can change in a model, in the terms both sides share.
type written struct {
	Relations map[int]relationData
	Apps      map[string]appData
	Units     map[string]unitData
	Secrets   map[string]secretData
	Actions   map[string]actionData
}

type relationData struct {
	App, Unit map[string]map[string]string
}

type appData struct {
	Status, Message, Version string
	LeaderData               map[string]string
}

type unitData struct {
	Status, Message string
	Ports           []string
	CharmState      map[string]string
}

type secretData struct {
	OwnerApp, OwnerUnit, Label, Description, RotatePolicy string
	NextRotate                                            time.Time
	Revisions                                             []model.SecretRevision
	Grants                                                []model.SecretGrant
	Consumers                                             map[string]model.SecretConsumer
}

type actionData struct {
	Results map[string]any
	Log     []string
}

func project(s *model.State) written {
	w := written{Relations: map[int]relationData{}, Apps: map[string]appData{}, Units: map[string]unitData{},
		Secrets: map[string]secretData{}, Actions: map[string]actionData{}}
	for id, r := range s.Relations {
		w.Relations[id] = relationData{App: nonEmpty(r.AppData), Unit: nonEmpty(r.UnitData)}
	}
	for n, a := range s.Applications {
		w.Apps[n] = appData{a.Status.Status, a.Status.Message, a.Version, a.LeaderData}
	}
	for n, u := range s.Units {
		w.Units[n] = unitData{u.Workload.Status, u.Workload.Message, u.Ports, u.CharmState}
	}
	for id, sec := range s.Secrets {
		d := secretData{OwnerApp: sec.OwnerApp, OwnerUnit: sec.OwnerUnit, Label: sec.Label, Description: sec.Description,
			RotatePolicy: sec.RotatePolicy, NextRotate: sec.NextRotate, Revisions: sec.Revisions, Grants: sec.Grants,
			Consumers: map[string]model.SecretConsumer{}}
		for u, c := range sec.Consumers {
			d.Consumers[u] = *c
		}
		w.Secrets[id] = d
	}
	for id, a := range s.Actions {
		d := actionData{Results: a.Results}
		for _, l := range a.Log {
			if _, msg, ok := strings.Cut(l, " "); ok && len(l) > 20 && l[4] == '-' {
				l = msg
			}
			d.Log = append(d.Log, l)
		}
		w.Actions[id] = d
	}
	return w
}

// nonEmpty drops empty databags: a bag nobody wrote and one emptied are the same to a reader.
func nonEmpty(m map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for k, v := range m {
		if len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// cloneState copies s (it came as JSON, and goes back the same way).
func cloneState(s *model.State) *model.State {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var c model.State
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return &c
}
