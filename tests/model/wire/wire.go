// Package wire is the local model's socket protocol: a client (the hook tools, jujuc; the
// juju-local CLI) sends one JSON Request, and the server answers with frames of output and
// the exit code. It imports only the standard library, so that jujuc, which every hook tool
// call starts, stays small.
package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Request is one command sent over a model socket: a hook tool invocation (Context names the
// hook context, JUJU_CONTEXT_ID) or a CLI verb (Context empty). Stdin carries the command's
// input when it reads any (relation-set --file -; the client reads named files itself).
type Request struct {
	Argv    []string `json:"argv"`
	Context string   `json:"context,omitempty"`
	Stdin   []byte   `json:"stdin,omitempty"`
	// Dir is the client's working directory, for relative paths (deploy ./charm).
	Dir string `json:"dir,omitempty"`
}

// frame is one message from the server: output, or the final exit code.
type frame struct {
	Stdout string `json:"out,omitempty"`
	Stderr string `json:"err,omitempty"`
	Exit   *int   `json:"exit,omitempty"`
}

// Call sends req to the unix socket at path, copies the command's output to stdout and stderr
// as it arrives and returns its exit code. Cancelling ctx closes the connection, which cancels
// the command on the server.
func Call(ctx context.Context, path string, req Request, stdout, stderr io.Writer) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return 0, fmt.Errorf("cannot reach the model at %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return 0, fmt.Errorf("cannot send request: %w", err)
	}
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("cannot read reply from the model: %w", err)
		}
		if f.Stdout != "" {
			io.WriteString(stdout, f.Stdout)
		}
		if f.Stderr != "" {
			io.WriteString(stderr, f.Stderr)
		}
		if f.Exit != nil {
			return *f.Exit, nil
		}
	}
}

// Handler runs one request, writing to stdout and stderr, and returns the exit code.
type Handler func(ctx context.Context, req Request, stdout, stderr io.Writer) int

// Serve accepts connections on ln until it is closed, running h for each request. A
// connection closed by the client cancels the context given to h.
func Serve(ctx context.Context, ln net.Listener, h Handler, wg *sync.WaitGroup) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			serveConn(ctx, conn, h)
		}()
	}
}

func serveConn(ctx context.Context, conn net.Conn, h Handler) {
	br := bufio.NewReader(conn)
	var req Request
	if err := json.NewDecoder(br).Decode(&req); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The client sends nothing more: a read returning means it hung up.
		var b [1]byte
		conn.Read(b[:])
		cancel()
	}()
	fw := &frameWriter{enc: json.NewEncoder(conn)}
	code := h(ctx, req, fw.writer(false), fw.writer(true))
	fw.mu.Lock()
	fw.enc.Encode(frame{Exit: &code})
	fw.mu.Unlock()
}

type frameWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

type frameStream struct {
	fw     *frameWriter
	stderr bool
}

func (fw *frameWriter) writer(stderr bool) io.Writer { return &frameStream{fw, stderr} }

func (s *frameStream) Write(p []byte) (int, error) {
	s.fw.mu.Lock()
	defer s.fw.mu.Unlock()
	f := frame{Stdout: string(p)}
	if s.stderr {
		f = frame{Stderr: string(p)}
	}
	if err := s.fw.enc.Encode(f); err != nil {
		return 0, err
	}
	return len(p), nil
}
