package juju

import "context"

// Leadership runs is-leader.
type Leadership struct {
	Runner Runner
	// ahead is the answer Ask started, shared by the copies of this value; nil before Ask.
	ahead *leaderAnswer
}

// leaderAnswer is one is-leader run in the background: leader and err are set before done
// closes.
type leaderAnswer struct {
	done   chan struct{}
	leader bool
	err    error
}

// IsLeader reports whether this unit is its application's leader:
// is-leader --format=json. Leadership holds for the rest of the hook. After Ask, it waits for
// the answer Ask started instead of running is-leader again.
func (c Leadership) IsLeader(ctx context.Context) (bool, error) {
	if a := c.ahead; a != nil {
		select {
		case <-a.done:
			return a.leader, a.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return c.ask(ctx)
}

func (c Leadership) ask(ctx context.Context) (bool, error) {
	var leader bool
	err := runJSON(ctx, c.Runner, &leader, "is-leader", "--format=json")
	return leader, err
}

// Ask starts is-leader in the background, for a hook that will call IsLeader anyway: the
// tool's process then runs while the hook does its other work (loading its state, its other
// hook-tool calls), and IsLeader, on c or any copy made after Ask, waits for its answer (or its
// error). Leadership holds for the hook, so the answer is the one IsLeader would get later in
// the hook. The Runner must be safe for concurrent use (ExecRunner is); call Wait before the
// hook ends. Ask twice runs is-leader once.
func (c *Leadership) Ask(ctx context.Context) {
	if c.ahead != nil {
		return
	}
	a := &leaderAnswer{done: make(chan struct{})}
	c.ahead = a
	go func() {
		defer close(a.done)
		a.leader, a.err = c.ask(ctx)
	}()
}

// Wait waits until the is-leader Ask started has ended (at once without Ask), so that no tool
// runs past the hook whose answer nobody reads.
func (c Leadership) Wait() {
	if c.ahead != nil {
		<-c.ahead.done
	}
}
