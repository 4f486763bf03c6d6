// Command juju-referee judges the local model (tests/model) with Juju 3.6's own code: the
// model sends it, one JSON line each (model.RefereeRequest), every hook-tool call it served
// and every step of its unit agents. The referee replays each tool call through Juju's jujuc
// server and commands (internal/worker/uniter/runner/jujuc, over a unix socket as Juju's jujuc
// client calls it) against the same state, and answers one JSON line (model.RefereeReply)
// naming what Juju's code does differently; it runs Juju's uniter beside each unit on the
// remote states the unit's agent chose from (hooks.go) and, asked to finish, names every hook
// the model ran, or did not run, where Juju's uniter would not have.
//
// # Why this module's path is under github.com/juju/juju
//
// Juju's hook tools and resolvers live in internal packages, which Go lets only packages
// under github.com/juju/juju/ import; this module (github.com/juju/juju/x/referee) is ours,
// not Juju's. It is outside the workspace (go.work) and built with GOWORK=off
// (model.BuildBinaries), so Juju's dependency versions never reach the operators' modules; it
// copies Juju's replace of gopkg.in/yaml.v2, as Go ignores a dependency's replaces.
//
// # Licence
//
// Juju is AGPL-3.0. This referee is test-only: no charm, library or operator imports it,
// and nothing of it is packed into a charm.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "juju-referee:", err)
		os.Exit(1)
	}
}

func serve() error {
	tools, err := newToolReplayer()
	if err != nil {
		return err
	}
	defer tools.close()
	dir, err := os.MkdirTemp("", "rf-uniters")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	order := newHookJudge(dir)
	dec := json.NewDecoder(bufio.NewReaderSize(os.Stdin, 1<<16))
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return fmt.Errorf("cannot read a request: %w", err)
		}
		var rep reply
		switch {
		case req.Tool != nil:
			rep.Diff = tools.judge(req.Tool)
		case req.Agent != nil:
			order.event(req.Agent)
		case req.Finish:
			rep.Diffs = order.finish()
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}
