package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
)

// The referee: Juju 3.6's own code judging the model (tests/referee, docs/fidelity.md). When
// Options.Referee names the referee binary (RefereeBeside), the model hands it every hook-tool
// call it served (the hook's view before and after, the argv, stdin and what the tool printed
// and returned), which the referee replays through Juju's jujuc server and commands. Each
// difference is kept, and Close returns them all: a test that closes its model fails on the
// first tool call the model answers differently from Juju.

// ToolCall is one hook-tool call as the model served it, for the referee to replay.
type ToolCall struct {
	Unit    string `json:"unit"`
	App     string `json:"application"`
	Machine string `json:"machine"`
	Hook    Hook   `json:"hook"`
	// Model, the state when the tool ran (the hook's view for everything a hook sees; the live
	// model for the machine address and the running action), Before and After the call.
	Before *State `json:"before"`
	After  *State `json:"after"`
	// ActionFailed and ActionMessage are action-fail's effect, before and after the call.
	ActionFailed  [2]bool   `json:"action-failed"`
	ActionMessage [2]string `json:"action-message"`
	Argv          []string  `json:"argv"`
	Stdin         []byte    `json:"stdin,omitempty"`
	Stdout        string    `json:"stdout"`
	Stderr        string    `json:"stderr"`
	Code          int       `json:"code"`
	// Log is the debug-log lines the call wrote.
	Log []string `json:"log,omitempty"`
}

// RefereeRequest is one line the model sends the referee.
type RefereeRequest struct {
	Tool  *ToolCall   `json:"tool,omitempty"`
	Agent *AgentEvent `json:"agent,omitempty"`
	// Finish asks for the differences found in the agents' hook order (the last request).
	Finish bool `json:"finish,omitempty"`
}

// RefereeReply is the referee's answer to one request: what Juju's code does differently
// (empty: nothing); to Finish, every difference found in the hook order.
type RefereeReply struct {
	Diff  string   `json:"diff,omitempty"`
	Diffs []string `json:"diffs,omitempty"`
}

// RefereeBeside is the referee binary (juju-referee) beside the juju-local CLI binary cli,
// where BuildBinaries builds it.
func RefereeBeside(cli string) string { return filepath.Join(filepath.Dir(cli), "juju-referee") }

// maxRefereeDiffs bounds the differences Close reports; the rest are counted.
const maxRefereeDiffs = 20

// referee is the running referee process: requests are encoded under the model's lock and
// queued, so no hook waits for Juju's code; one goroutine sends them in order and reads the
// replies.
type referee struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte
	closed bool
	diffs  []string
	more   int
	err    error
	done   chan struct{}
}

func startReferee(bin string) (*referee, error) {
	r := &referee{done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	r.cmd = exec.Command(bin)
	r.cmd.Stderr = &r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("cannot start the referee: %w", err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start the referee: %w", err)
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the referee: %w", err)
	}
	go r.loop(bufio.NewReaderSize(out, 1<<16))
	return r, nil
}

// send queues req; callers may hold the model's lock.
func (r *referee) send(req RefereeRequest) {
	b, err := json.Marshal(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err = errors.Join(r.err, fmt.Errorf("cannot encode a referee request: %w", err))
		return
	}
	if r.closed {
		return
	}
	r.queue = append(r.queue, append(b, '\n'))
	r.cond.Signal()
}

func (r *referee) loop(out *bufio.Reader) {
	defer close(r.done)
	dec := json.NewDecoder(out)
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.cond.Wait()
		}
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		b := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		var rep RefereeReply
		_, err := r.stdin.Write(b)
		if err == nil {
			err = dec.Decode(&rep)
		}
		r.mu.Lock()
		switch {
		case err != nil:
			r.err = errors.Join(r.err, fmt.Errorf("the referee stopped answering: %w", err))
			r.queue, r.closed = nil, true
		}
		for _, d := range append(rep.Diffs, rep.Diff) {
			switch {
			case d == "":
			case len(r.diffs) < maxRefereeDiffs:
				r.diffs = append(r.diffs, d)
			default:
				r.more++
			}
		}
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// close waits for the queued requests' answers, stops the referee and returns every
// difference it found.
func (r *referee) close(ctx context.Context) error {
	r.send(RefereeRequest{Finish: true})
	r.mu.Lock()
	r.closed = true
	r.cond.Signal()
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		r.cmd.Process.Kill()
		<-r.done
	}
	r.stdin.Close()
	waitErr := r.cmd.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := []error{r.err}
	if r.err != nil && waitErr != nil {
		errs = append(errs, fmt.Errorf("referee: %v: %s", waitErr, strings.TrimSpace(r.stderr.String())))
	}
	for _, d := range r.diffs {
		errs = append(errs, errors.New(d))
	}
	if r.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more differences", r.more))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the model differs from Juju 3.6's own code (the referee): %w", err)
	}
	return nil
}

// refereeTool hands a tool call to the referee; callers hold m.mu.
func (m *Model) refereeTool(c *ToolCall) {
	if m.referee != nil {
		m.referee.send(RefereeRequest{Tool: c})
	}
}

// toolCallRecord is a ToolCall being served: its output is copied as the tool writes it.
type toolCallRecord struct {
	ToolCall
	out, err bytes.Buffer
	logs     int // len(m.logLines) when the call started
}

// toolCall starts the record of a call of hc's hook; callers hold m.mu.
func (hc *hookContext) toolCall(req Request) *toolCallRecord {
	c := &toolCallRecord{logs: len(hc.m.logLines)}
	c.Unit, c.App, c.Machine, c.Hook = hc.unit, hc.app, hc.machine, hc.hook
	c.Argv, c.Stdin = req.Argv, req.Stdin
	c.Before = hc.toolState()
	c.ActionFailed[0], c.ActionMessage[0] = hc.actionFailed, hc.actionMessage
	return c
}

// finishToolCall completes c once the tool returned code; callers hold m.mu.
func (hc *hookContext) finishToolCall(c *toolCallRecord, code int) {
	c.After = hc.toolState()
	c.ActionFailed[1], c.ActionMessage[1] = hc.actionFailed, hc.actionMessage
	c.Stdout, c.Stderr, c.Code = c.out.String(), c.err.String(), code
	c.Log = append([]string(nil), hc.m.logLines[c.logs:]...)
}

// toolState is what a tool of hc sees: the hook's view, with the live model's machine (its
// address) and running action, as the tools read them.
func (hc *hookContext) toolState() *State {
	s := hc.view.clone()
	if ms := hc.m.state.Machines[hc.machine]; ms != nil {
		c := *ms
		s.Machines[hc.machine] = &c
	}
	if act := hc.m.state.Actions[hc.hook.ActionID]; act != nil {
		s.Actions[act.ID] = deepCopy(reflect.ValueOf(act)).Interface().(*ActionRun)
	}
	return s
}
