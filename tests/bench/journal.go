package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
)

// machineTrace completes the trace of a join on a systemd machine (lines "+  0.123s ...",
// offsets from t0): the node's IDLE time and what the machine's systemd logged once the
// machine was provisioned (units started and stopped, reloads; not its boot), merged in time
// order.
func (c *opCluster) machineTrace(ctx context.Context, unit string, t0 time.Time, idle time.Duration, lines []string) []string {
	lines = append(lines, fmt.Sprintf("+%7.3fs node %s IDLE", idle.Seconds(), slurmd.NodeName(unit)))
	m, err := c.machine(unit)
	if err == nil {
		var out []byte
		// PID 1's own messages: short-unix gives each line's time in seconds since the epoch.
		out, err = m.Run(ctx, "journalctl", "-q", "--no-pager", "-o", "short-unix", "_PID=1")
		host, _ := c.provisioned(unit, t0)
		lines = append(lines, JournalTrace(t0, t0.Add(host), "machine: ", out)...)
	}
	if err != nil {
		lines = append(lines, "machine journal: "+err.Error())
	}
	return SortTrace(lines)
}

// JournalTrace renders the lines of `journalctl -o short-unix` ("<seconds since the epoch>
// <host> <identifier>: <message>") logged at from or later as trace lines, offsets from t0,
// each message after prefix. Lines it cannot read are left out.
func JournalTrace(t0, from time.Time, prefix string, out []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		stamp, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		secs, err := strconv.ParseFloat(stamp, 64)
		if err != nil || secs <= 0 || secs > 1e11 {
			continue
		}
		at := time.Unix(0, int64(secs*1e9))
		if at.Before(from) {
			continue
		}
		// Drop the host name; keep "systemd[1]: message".
		if _, msg, ok := strings.Cut(rest, " "); ok {
			rest = msg
		}
		lines = append(lines, fmt.Sprintf("+%7.3fs %s%s", at.Sub(t0).Seconds(), prefix, rest))
	}
	return lines
}

// SortTrace orders trace lines by their offset ("+  0.123s ..."), keeping the order of lines
// with equal offsets; lines with no offset go last.
func SortTrace(lines []string) []string {
	offset := func(l string) (float64, bool) {
		v, _, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(l, "+")), "s ")
		if !ok || !strings.HasPrefix(l, "+") {
			return 0, false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	sort.SliceStable(lines, func(i, j int) bool {
		a, okA := offset(lines[i])
		b, okB := offset(lines[j])
		if okA != okB {
			return okA
		}
		return okA && a < b
	})
	return lines
}
