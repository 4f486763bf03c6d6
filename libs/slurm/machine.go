package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// MachineInfo is what `slurmd -C` reports about this host, without NodeName: the node
// parameters in slurmd's order (CPUs, Boards, SocketsPerBoard, CoresPerSocket,
// ThreadsPerCore, RealMemory, and Gres where present). The UpTime line is ignored.
type MachineInfo struct {
	// Hostname is slurmd's NodeName= value (the host name it detected).
	Hostname string
	// Params are the key=value words after NodeName, in order (Params.Get finds one).
	Params slurmconf.Params

	CPUs, Boards, SocketsPerBoard, CoresPerSocket, ThreadsPerCore int
	// RealMemory is in MiB.
	RealMemory int64
}

// String renders the parameters as one node line without NodeName, ready for
// `slurmd -Z --conf`: "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105".
// Words are joined as slurmd -C printed them, unquoted (Params.String would quote an empty
// value, and the result would no longer parse back to the same params).
func (m MachineInfo) String() string {
	words := make([]string, len(m.Params))
	for i, p := range m.Params {
		words[i] = p.Key + "=" + p.Value
	}
	return strings.Join(words, " ")
}

// ParseMachineInfo parses `slurmd -C` output. Besides the NodeName= and UpTime= lines it
// ignores the lines of GPU detection that Slurm 26.05 prints on a machine where it finds
// GPUs ("Found gpu:tesla_t4:2 with Autodetect=nvml (...)", one per detection method), whose
// result is the NodeName line's Gres=.
func ParseMachineInfo(data []byte) (MachineInfo, error) {
	var m MachineInfo
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "UpTime=") || strings.HasPrefix(line, "Found ") {
			continue
		}
		if !strings.HasPrefix(line, "NodeName=") {
			return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C line %d %q: want NodeName=, UpTime= or Found lines", lineNo, line)
		}
		if found {
			return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C line %d: second NodeName= line", lineNo)
		}
		found = true
		for i, w := range strings.Fields(line) {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C line %d: %q is not key=value", lineNo, w)
			}
			if i == 0 {
				m.Hostname = v
				continue
			}
			if strings.EqualFold(k, "NodeName") {
				return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C line %d: repeated NodeName", lineNo)
			}
			m.Params = append(m.Params, slurmconf.Param{Key: k, Value: v})
			var err error
			switch k {
			case "CPUs":
				m.CPUs, err = positive(k, v)
			case "Boards":
				m.Boards, err = positive(k, v)
			case "SocketsPerBoard":
				m.SocketsPerBoard, err = positive(k, v)
			case "CoresPerSocket":
				m.CoresPerSocket, err = positive(k, v)
			case "ThreadsPerCore":
				m.ThreadsPerCore, err = positive(k, v)
			case "RealMemory":
				m.RealMemory, err = strconv.ParseInt(v, 10, 64)
				if err != nil || m.RealMemory < 0 {
					err = fmt.Errorf("bad RealMemory=%q: not a size in MiB", v)
				}
			}
			if err != nil {
				return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C line %d: %w", lineNo, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C output: %w", err)
	}
	if !found {
		return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C output: no NodeName= line")
	}
	if m.CPUs == 0 {
		return MachineInfo{}, fmt.Errorf("cannot parse slurmd -C output: no CPUs=")
	}
	return m, nil
}

func positive(k, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad %s=%q: not a positive integer", k, v)
	}
	return n, nil
}
