// Command jujuc is the local model's hook tools, as Juju's jujuc is Juju's: a thin client,
// installed under every hook tool's name (relation-get, secret-add, status-set, ...: the
// model puts links with those names first on every hook's PATH). It sends its name and
// arguments to the model's agent socket ($JUJU_AGENT_SOCKET_ADDRESS) with $JUJU_CONTEXT_ID,
// prints what the model answers and exits with the tool's exit code. Files named by --file
// (and key#file=path secret values) are read here, inside the unit's host, and sent as input.
//
// Under the name juju-exec it is the machine's juju-exec (tests/model/jujuexec): it asks a
// unit's agent, through the run socket in the unit's agent directory, to run commands in a
// hook context.
//
// It imports only the standard library, tests/model/wire and tests/model/jujuexec (with
// Juju's flag package, gnuflag): a hook starts it for every tool call, so its start-up is part
// of every hook's time (the juju-local CLI is three times its size).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/charmed-slurm/operators/tests/model/jujuexec"
	"github.com/charmed-slurm/operators/tests/model/wire"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == jujuexec.Name {
		os.Exit(jujuexec.Main(os.Args[1:], jujuexec.Env{Getenv: os.Getenv, DataDir: jujuexec.DataDir(os.Args[0], exec.LookPath), Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(runTool(name, os.Args[1:]))
}

// runTool is the hook tool client.
func runTool(name string, args []string) int {
	sock := os.Getenv("JUJU_AGENT_SOCKET_ADDRESS")
	ctxID := os.Getenv("JUJU_CONTEXT_ID")
	if sock == "" || ctxID == "" {
		fmt.Fprintf(os.Stderr, "ERROR %s must run in a hook context (JUJU_AGENT_SOCKET_ADDRESS and JUJU_CONTEXT_ID unset)\n", name)
		return 1
	}
	args, stdin, err := toolInput(args, os.ReadFile, os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	code, err := wire.Call(context.Background(), sock, wire.Request{Argv: append([]string{name}, args...), Context: ctxID, Stdin: stdin}, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		return 1
	}
	return code
}

// toolInput rewrites the tool's arguments so that the model gets the content of the files they
// name, as it cannot read the unit's host: --file <path|-> becomes --file - (or --file=-) with
// the content, read with readFile or from stdin for "-", as the input it returns; a secret
// value key#file=path becomes key=<content>. Arguments after "--" are left alone.
func toolInput(args []string, readFile func(string) ([]byte, error), stdin io.Reader) ([]string, []byte, error) {
	var out []string
	var input []byte
	read := func(p string) ([]byte, error) {
		if p == "-" {
			return io.ReadAll(stdin)
		}
		return readFile(p)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			out = append(out, args[i:]...)
			return out, input, nil
		case a == "--file" && i+1 < len(args):
			b, err := read(args[i+1])
			if err != nil {
				return nil, nil, fmt.Errorf("cannot read --file: %w", err)
			}
			input = b
			out = append(out, "--file", "-")
			i++
		case strings.HasPrefix(a, "--file="):
			b, err := read(strings.TrimPrefix(a, "--file="))
			if err != nil {
				return nil, nil, fmt.Errorf("cannot read --file: %w", err)
			}
			input = b
			out = append(out, "--file=-")
		case !strings.HasPrefix(a, "-") && strings.Contains(a, "#file="):
			k, p, _ := strings.Cut(a, "#file=")
			b, err := readFile(p)
			if err != nil {
				return nil, nil, fmt.Errorf("cannot read secret value for %q: %w", k, err)
			}
			out = append(out, k+"="+string(b))
		default:
			out = append(out, a)
		}
	}
	return out, input, nil
}
