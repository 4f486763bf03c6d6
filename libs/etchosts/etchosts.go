// Package etchosts keeps the block of lines a charm owns in /etc/hosts, between two marker
// comments, and leaves every other line as it was:
//
//	# BEGIN slurmctld charm: login nodes (managed, edits are overwritten)
//	10.0.0.14 juju-3
//	# END slurmctld charm: login nodes
//
// A Slurm controller must resolve the host name srun sends it (the login node's short host
// name) to reach srun; where no DNS knows the login nodes, the controller's charm writes them
// here from their relation data.
//
// [Replace] is the pure edit: owner's block replaced by the entries (added at the end when
// absent, removed when there are none); a file with a broken block (BEGIN without END, or
// twice) is refused rather than guessed at. [Update] applies it to a file, in place: the
// file is not renamed, because a container's /etc/hosts is often a bind mount, which a
// rename cannot replace. Every entry is validated first: an IP address and host names of
// RFC 1123 letters, digits, '-' and '.', so that nothing else can reach the file.
package etchosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strings"
)

// Entry is one line: an address and its names.
type Entry struct {
	Addr  netip.Addr
	Names []string
}

// Validate checks e: a valid address, at least one name, each a host name.
func (e Entry) Validate() error {
	if !e.Addr.IsValid() {
		return errors.New("invalid hosts entry: no address")
	}
	if len(e.Names) == 0 {
		return fmt.Errorf("invalid hosts entry for %s: no name", e.Addr)
	}
	for _, n := range e.Names {
		if err := CheckName(n); err != nil {
			return fmt.Errorf("invalid hosts entry for %s: %w", e.Addr, err)
		}
	}
	return nil
}

// String is e's line, without the newline.
func (e Entry) String() string {
	return e.Addr.String() + " " + strings.Join(e.Names, " ")
}

// CheckName accepts a host name: dot-separated labels of letters, digits and '-', each 1 to
// 63 characters and not starting or ending with '-', at most 253 characters in all.
func CheckName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("invalid host name %q: empty or longer than 253 characters", short(name))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("invalid host name %q: bad label %q", short(name), short(label))
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("invalid host name %q: character %q", short(name), r)
			}
		}
	}
	return nil
}

// markers are the first and last lines of owner's block.
func markers(owner string) (begin, end string) {
	return "# BEGIN " + owner + " (managed, edits are overwritten)", "# END " + owner
}

// Replace returns content with owner's block holding entries: replaced where it is, added at
// the end when absent, removed when entries is empty. Lines outside the block are kept byte
// for byte. A block whose markers are broken, or an invalid entry, is an error and content is
// not edited.
func Replace(content []byte, owner string, entries []Entry) ([]byte, error) {
	if owner == "" || strings.ContainsAny(owner, "\n\r") {
		return nil, fmt.Errorf("invalid hosts block owner %q", short(owner))
	}
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return nil, err
		}
	}
	begin, end := markers(owner)
	lines := strings.SplitAfter(string(content), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first, last := -1, -1
	for i, l := range lines {
		switch strings.TrimRight(l, "\r\n") {
		case begin:
			if first >= 0 {
				return nil, fmt.Errorf("cannot edit the hosts block of %s: it begins twice", owner)
			}
			first = i
		case end:
			if first < 0 || last >= 0 {
				return nil, fmt.Errorf("cannot edit the hosts block of %s: an end without its beginning", owner)
			}
			last = i
		}
	}
	if first >= 0 && last < 0 {
		return nil, fmt.Errorf("cannot edit the hosts block of %s: it has no end", owner)
	}
	var block strings.Builder
	if len(entries) > 0 {
		block.WriteString(begin + "\n")
		for _, e := range entries {
			block.WriteString(e.String() + "\n")
		}
		block.WriteString(end + "\n")
	}
	var out bytes.Buffer
	if first < 0 {
		out.WriteString(strings.Join(lines, ""))
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) && block.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(block.String())
		return out.Bytes(), nil
	}
	out.WriteString(strings.Join(lines[:first], ""))
	out.WriteString(block.String())
	out.WriteString(strings.Join(lines[last+1:], ""))
	return out.Bytes(), nil
}

// Update makes path hold owner's block with entries (Replace) and reports whether the file
// changed. It writes in place, keeping the file's mode, owner and inode; a missing file is
// created (0644) when there are entries.
func Update(ctx context.Context, path, owner string, entries []Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("cannot update %s: %w", path, err)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("cannot read %s: %w", path, err)
	}
	data, err := Replace(old, owner, entries)
	if err != nil {
		return false, fmt.Errorf("cannot update %s: %w", path, err)
	}
	if bytes.Equal(old, data) {
		return false, nil
	}
	if err := writeInPlace(path, data); err != nil {
		// Put back what was there: a half-written /etc/hosts loses localhost.
		if old != nil {
			err = errors.Join(err, writeInPlace(path, old))
		}
		return false, fmt.Errorf("cannot update %s: %w", path, err)
	}
	return true, nil
}

// writeInPlace truncates path and writes data to it (created 0644 when missing).
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// short is s cut to 60 bytes, for messages.
func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
