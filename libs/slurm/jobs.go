package slurm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Job is one job as squeue lists it.
type Job struct {
	ID        string // "123", or "123_4" for an array task
	State     string // RUNNING, COMPLETING, PENDING, ...
	Partition string
	User      string
	Nodes     string // hostlist expression; empty while pending
	Name      string
}

// squeueFormat is the -o format ParseSqueue reads; the job name is last because it may
// contain the separator.
const squeueFormat = "%i|%T|%P|%u|%N|%j"

// activeJobStates are the job states that occupy a node: a node with such a job must not
// be deleted.
var activeJobStates = []string{"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}

// ParseSqueue parses `squeue -h -o "%i|%T|%P|%u|%N|%j"` output.
func ParseSqueue(data []byte) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("cannot parse squeue line %d %q: want 6 fields separated by '|'", lineNo, line)
		}
		if f[0] == "" || strings.ContainsAny(f[0], " \t") {
			return nil, fmt.Errorf("cannot parse squeue line %d: bad job id %q", lineNo, f[0])
		}
		if f[1] == "" {
			return nil, fmt.Errorf("cannot parse squeue line %d: empty job state", lineNo)
		}
		jobs = append(jobs, Job{ID: f[0], State: f[1], Partition: f[2], User: f[3], Nodes: f[4], Name: f[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot parse squeue output: %w", err)
	}
	return jobs, nil
}

// ParseListJobsJSON parses `scontrol listjobs --json` (Slurm 24.05 and later): the jobs
// with steps on the local node. Only the job ids are known; State is "RUNNING".
func ParseListJobsJSON(data []byte) ([]Job, error) {
	var doc struct {
		Jobs []struct {
			JobID json.Number `json:"job_id"`
		} `json:"jobs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("cannot parse scontrol listjobs --json output: %w", err)
	}
	var jobs []Job
	for _, j := range doc.Jobs {
		if j.JobID == "" {
			return nil, fmt.Errorf("cannot parse scontrol listjobs --json output: job without job_id")
		}
		jobs = append(jobs, Job{ID: j.JobID.String(), State: "RUNNING"})
	}
	return jobs, nil
}
