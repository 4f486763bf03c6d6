package juju

import "context"

// Actions runs the action tools: action-get, action-set, action-fail and
// action-log. They work only while an action runs.
type Actions struct{ Runner Runner }

// Params decodes the action's parameters into v (a struct with json tags,
// or a map[string]any): action-get --format=json.
func (c Actions) Params(ctx context.Context, v any) error {
	return runJSON(ctx, c.Runner, v, "action-get", "--format=json")
}

// Set adds results: action-set key=value ... (sorted by key). Keys are
// lowercase letters, digits and '-', starting and ending with a letter or
// digit; dots nest (node.state=idle gives {"node": {"state": "idle"}}).
// Juju rejects other keys and the reserved stdout, stderr,
// stdout-encoding and stderr-encoding.
func (c Actions) Set(ctx context.Context, results map[string]string) error {
	if len(results) == 0 {
		return nil
	}
	_, err := run(ctx, c.Runner, nil, append([]string{"action-set"}, keyValueArgs(results)...)...)
	return err
}

// Fail marks the action failed with msg: action-fail <msg>.
func (c Actions) Fail(ctx context.Context, msg string) error {
	_, err := run(ctx, c.Runner, nil, textArgs([]string{"action-fail"}, msg)...)
	return err
}

// Log records a progress message the user sees while the action runs:
// action-log <msg>.
func (c Actions) Log(ctx context.Context, msg string) error {
	_, err := run(ctx, c.Runner, nil, textArgs([]string{"action-log"}, msg)...)
	return err
}

// textArgs appends a free-text argument, preceded by "--" when it starts
// with '-' so that the tool does not take it for a flag.
func textArgs(args []string, text string) []string {
	if len(text) > 0 && text[0] == '-' {
		args = append(args, "--")
	}
	return append(args, text)
}
