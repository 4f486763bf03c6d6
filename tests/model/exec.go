package model

// juju-exec: commands run in a unit's hook context on request from the unit's own machine,
// as Juju 3.6's uniter runs them (internal/worker/uniter/runlistener.go: the unit's run
// socket; runcommands/runcommands.go and resolver.go: queued behind the running hook, after
// pending actions and before other hooks, also on a unit in error; operation/runcommands.go:
// under the machine lock; runner/runner.go: `/bin/bash <script>` in the charm directory with
// the hook variables but no JUJU_DISPATCH_PATH, its writes flushed whatever the commands'
// exit code; runner/context/contextfactory.go: context id <unit>-run-commands-<n>, no hook
// name). The client is jujuc under the name juju-exec (tests/cmd/jujuc, tests/model/jujuexec).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/charmed-slurm/operators/tests/model/jujuexec"
	"github.com/charmed-slurm/operators/tests/model/wire"
)

// JujuExec is the name under which jujuc is juju-exec (tests/model/jujuexec), the command
// that runs commands in a unit's hook context from the unit's machine.
const JujuExec = jujuexec.Name

// RunSocket is the name of the juju-exec socket in each unit's agent directory on its
// machine (/var/lib/juju/agents/unit-<app>-<n>/run.socket), where Juju's uniter listens too.
const RunSocket = jujuexec.RunSocket

// RunCommands is the hook kind of a juju-exec context (Hook.Kind): it names the context
// (<unit>-run-commands-<n>) and is no hook, so JUJU_HOOK_NAME is empty and there is no
// JUJU_DISPATCH_PATH.
const RunCommands = "run-commands"

// ToolsDir is unit's hook tools directory as commands on its machine see it, where juju-exec
// is too (Exec runs no command with it on PATH, as Juju's machine has juju-exec in /usr/bin).
func (m *Model) ToolsDir(unit string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, u := m.agents[unit], m.state.Units[unit]
	if a == nil || u == nil || !u.Ready { // toolsDir is set before Ready, under m.mu
		return "", fmt.Errorf("no unit %s with its tools installed", unit)
	}
	if a.toolsDir == "" {
		return "", fmt.Errorf("no unit %s with its tools installed", unit)
	}
	return a.toolsDir, nil
}

// execRequest is one juju-exec waiting for its unit's agent.
type execRequest struct {
	id       string // its unit's run-commands id (RemoteState.Commands)
	commands string
	done     chan execResult // buffered: the agent never waits for the client
}

// execResult is what juju-exec prints and exits with; err is a failure to run the commands
// at all (printed as an ERROR line, exit 1), not a non-zero exit code.
type execResult struct {
	stdout, stderr []byte
	code           int
	err            error
}

// execListener is a unit's run socket. dir stays open while it listens: the socket is bound
// and removed through it (/proc/self/fd/<n>/run.socket), since the machine's directory may
// be too long a path for a unix socket address.
type execListener struct {
	ln   net.Listener
	dir  *os.File
	path string // the socket file, as the model's process sees it
}

// listenExec opens the unit's run socket in its agent directory on the machine and serves it.
func (a *agent) listenExec() error {
	m := a.m
	agentDir := a.machine.Path(path.Join("/var/lib/juju/agents", unitTag(a.unit)))
	dir, err := os.Open(agentDir)
	if err != nil {
		return fmt.Errorf("cannot open the run socket's directory: %w", err)
	}
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), RunSocket)
	os.Remove(short)
	ln, err := net.Listen("unix", short)
	if err != nil {
		dir.Close()
		return fmt.Errorf("cannot listen on the run socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	sock := filepath.Join(agentDir, RunSocket)
	// juju-exec runs as root, as on a Juju machine, whose run sockets only root can reach.
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		dir.Close()
		return fmt.Errorf("cannot restrict the run socket: %w", err)
	}
	m.mu.Lock()
	a.exec = &execListener{ln: ln, dir: dir, path: sock}
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		wire.Serve(m.ctx, ln, a.serveExec, &m.wg)
	}()
	return nil
}

// closeExec stops serving the run socket and removes it; callers hold m.mu. Commands still
// queued fail as on a unit whose agent is gone.
func (a *agent) closeExec() {
	if a.exec != nil {
		a.exec.ln.Close()
		os.Remove(a.exec.path)
		a.exec.dir.Close()
		a.exec = nil
	}
	for _, r := range a.execQueue {
		r.done <- execResult{err: fmt.Errorf("no runner is registered for unit %s", a.unit)}
	}
	a.execQueue = nil
}

// serveExec answers one juju-exec call: Argv is juju-exec, the unit and the commands (the
// client has parsed the command line). It waits for the commands' result; a client that hangs
// up first does not cancel them (Juju's run listener runs them anyway).
func (a *agent) serveExec(ctx context.Context, req Request, stdout, stderr io.Writer) int {
	m := a.m
	if len(req.Argv) != 3 || req.Argv[0] != JujuExec {
		fmt.Fprintln(stderr, "ERROR bad request: want juju-exec <unit> <commands>")
		return 1
	}
	unit, commands := req.Argv[1], req.Argv[2]
	m.mu.Lock()
	r := &execRequest{id: strconv.Itoa(a.execIDs), commands: commands, done: make(chan execResult, 1)}
	a.execIDs++
	u := m.state.Units[a.unit]
	if unit != a.unit || u == nil || u.Seen.Removed || a.exec == nil {
		m.mu.Unlock()
		fmt.Fprintf(stderr, "ERROR no runner is registered for unit %s\n", unit)
		return 1
	}
	a.execQueue = append(a.execQueue, r)
	m.notify()
	m.mu.Unlock()
	var res execResult
	select {
	case res = <-r.done:
	case <-ctx.Done():
		return 1
	}
	if res.err != nil {
		fmt.Fprintf(stderr, "ERROR %v\n", res.err)
		return 1
	}
	stdout.Write(res.stdout)
	stderr.Write(res.stderr)
	return res.code
}

// commandIDs are the ids of the juju-exec commands queued, oldest first (the remote state's
// Commands, as Juju's run listener hands them to the uniter); callers hold m.mu.
func (a *agent) commandIDs() []string {
	var ids []string
	for _, r := range a.execQueue {
		ids = append(ids, r.id)
	}
	return ids
}

// takeExec takes the queued juju-exec decide chose (the oldest); callers hold m.mu.
func (a *agent) takeExec(id string) *execRequest {
	for i, r := range a.execQueue {
		if r.id == id {
			a.execQueue = append(a.execQueue[:i:i], a.execQueue[i+1:]...)
			return r
		}
	}
	return nil
}

// runExec runs a juju-exec's commands in a new context, as the unit's one operation of the
// moment (the machine lock); callers hold m.mu, which is released while the commands run and
// held again on return. The context's writes are committed whenever the commands ran, whatever
// their exit code, as Juju flushes a run-commands context without the commands' status.
func (a *agent) runExec(ctx context.Context, u *Unit, r *execRequest) {
	m := a.m
	if r == nil {
		return
	}
	before := u.Agent
	u.Agent = StatusInfo{Status: "executing", Message: "running commands", Since: time.Now()}
	a.running = true
	hc, view := a.newContext(Hook{Kind: RunCommands})
	hc.view = view
	m.contexts[hc.id] = hc
	m.mu.Unlock()

	m.progress("%s: running commands", a.unit)
	// juju-exec takes the machine lock as a hook does (a subordinate's commands never overlap
	// its principal's hooks).
	lock := m.machineLock(a.machineID)
	lock.Lock()
	res := a.runCommands(ctx, hc, r.commands)
	lock.Unlock()

	m.mu.Lock()
	delete(m.contexts, hc.id)
	a.running = false
	if u = m.state.Units[a.unit]; u != nil && before.Status == "error" {
		u.Agent = before // still in error: only a retry or a resolve clears it
	}
	if res.err == nil && ctx.Err() == nil {
		hc.commit(m.state)
	}
	m.cleanup()
	m.saveLater()
	m.notify()
	r.done <- res
	if res.err != nil {
		m.progress("%s: cannot run commands: %v", a.unit, res.err)
	} else {
		m.progress("%s: ran commands (exit %d)", a.unit, res.code)
	}
}

// runCommands runs commands with bash on the machine, from a script file (stdin stays empty,
// as with Juju's `/bin/bash <tempdir>/script.sh`), in the charm directory, with the context's
// environment.
func (a *agent) runCommands(ctx context.Context, hc *hookContext, commands string) execResult {
	script := path.Join("/var/lib/juju/agents", unitTag(a.unit), "run-commands-"+randomSuffix()+".sh")
	if err := os.WriteFile(a.machine.Path(script), []byte(commands), 0o600); err != nil {
		return execResult{err: fmt.Errorf("cannot write the commands' script: %w", err)}
	}
	defer os.Remove(a.machine.Path(script))
	cmd := a.machine.Command(ctx, a.charmDir, []string{"/bin/bash", a.machine.Root() + script})
	cmd.Env = append(cmd.Env, a.env(hc)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := execResult{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.Exited():
		res.code = ee.ExitCode()
	case err != nil:
		res.err = fmt.Errorf("cannot run commands: %w", err)
	}
	return res
}
