package gres

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/libs/command"
)

// NvidiaSMIQuery returns the nvidia-smi command line Detect runs: its
// documented CSV query of each GPU's minor number (the N of /dev/nvidiaN),
// product name and UUID, one GPU a line, fields separated by ", ".
func NvidiaSMIQuery() []string {
	return []string{"nvidia-smi", "--query-gpu=minor_number,name,uuid", "--format=csv,noheader"}
}

// Device is one detected NVIDIA GPU.
type Device struct {
	// Minor is the device's minor number: its file is /dev/nvidia<Minor>.
	Minor int
	// File is the device file on the node ("/dev/nvidia0").
	File string
	// Model is nvidia-smi's product name ("Tesla T4"); empty when
	// nvidia-smi did not answer.
	Model string
	// UUID is nvidia-smi's GPU UUID; empty when nvidia-smi did not answer.
	UUID string
}

// Type is the device's GRES type: TypeName(Model).
func (d Device) Type() string { return TypeName(d.Model) }

// Detection is what Detect found.
type Detection struct {
	// GPUs are the usable GPUs, by minor number.
	GPUs []Device
	// Notes say what was found but not used, or not found, and why, for
	// the operator to read ("nvidia-smi not found: GPU model unknown").
	Notes []string
}

// Resources groups the GPUs by type into one gpu Resource per type, in
// order of their first minor number, each with its device files. When some
// GPU has no type (its model is unknown or gives no valid type) all are
// untyped: Slurm cannot mix typed and untyped GPUs on one node.
func (d Detection) Resources() Set {
	untyped := slices.ContainsFunc(d.GPUs, func(g Device) bool { return g.Type() == "" })
	var set Set
	for _, g := range d.GPUs {
		t := g.Type()
		if untyped {
			t = ""
		}
		i := slices.IndexFunc(set, func(r Resource) bool { return r.Type == t })
		if i < 0 {
			set = append(set, Resource{Name: GPU, Type: t})
			i = len(set) - 1
		}
		set[i].Count++
		set[i].Files = append(set[i].Files, g.File)
	}
	return set
}

// Detector finds NVIDIA GPUs.
type Detector struct {
	// Runner runs nvidia-smi (NvidiaSMIQuery). Nil means nvidia-smi is not
	// asked: GPUs come from device files only, untyped.
	Runner command.Runner
	// Root is where the node's file system is: device files are looked
	// for in Root/dev. Empty means "/".
	Root string
	// Timeout bounds nvidia-smi: a hung one (a wedged driver) counts as
	// nvidia-smi not answering (a note), not as a hung hook. Zero means
	// DefaultQueryTimeout.
	Timeout time.Duration
}

// DefaultQueryTimeout bounds nvidia-smi when Detector.Timeout is zero.
const DefaultQueryTimeout = 30 * time.Second

// Detect looks for /dev/nvidia[0-9]+ character devices and asks nvidia-smi
// about them. The result holds a GPU for every device file nvidia-smi
// reports (typed by its model), or for every device file when nvidia-smi is
// missing or fails (untyped). A GPU nvidia-smi reports without a device file
// is left out. Neither device files nor nvidia-smi: no GPU, no error. An
// error means the node could not be read or nvidia-smi answered something
// that is not its documented CSV format; then nothing should be assumed.
func (d Detector) Detect(ctx context.Context) (Detection, error) {
	files, err := d.deviceFiles()
	if err != nil {
		return Detection{}, err
	}
	var det Detection
	rows, note, err := d.query(ctx)
	if err != nil {
		return Detection{}, err
	}
	if note != "" {
		if len(files) == 0 {
			return Detection{}, nil
		}
		det.Notes = append(det.Notes, note+": GPU model unknown, GPUs untyped")
		for _, minor := range files {
			det.GPUs = append(det.GPUs, Device{Minor: minor, File: devFile(minor)})
		}
		return det, nil
	}
	for _, r := range rows {
		if !slices.Contains(files, r.Minor) {
			det.Notes = append(det.Notes, fmt.Sprintf("nvidia-smi reports GPU %s (%s) but %s is missing: not used", r.UUID, r.Model, devFile(r.Minor)))
			continue
		}
		r.File = devFile(r.Minor)
		det.GPUs = append(det.GPUs, r)
	}
	for _, minor := range files {
		if !slices.ContainsFunc(rows, func(r Device) bool { return r.Minor == minor }) {
			det.Notes = append(det.Notes, fmt.Sprintf("%s is not reported by nvidia-smi: not used", devFile(minor)))
		}
	}
	slices.SortFunc(det.GPUs, func(a, b Device) int { return a.Minor - b.Minor })
	return det, nil
}

func devFile(minor int) string { return "/dev/nvidia" + strconv.Itoa(minor) }

// deviceFiles returns the minor numbers of Root/dev/nvidia[0-9]+ that are
// character devices (after following symbolic links), sorted.
func (d Detector) deviceFiles() ([]int, error) {
	root := d.Root
	if root == "" {
		root = "/"
	}
	dir := filepath.Join(root, "dev")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot look for GPU device files: %w", err)
	}
	var minors []int
	for _, e := range entries {
		// nvidia0 to nvidia9999 (not nvidiactl, nvidia-uvm, ...).
		minor, ok := strings.CutPrefix(e.Name(), "nvidia")
		if !ok || !shaped(minor, 4, isDigit, isDigit) {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
			continue // not a device (or a dangling link): not a GPU
		}
		n, _ := strconv.Atoi(minor)
		minors = append(minors, n)
	}
	slices.Sort(minors)
	return minors, nil
}

// query runs nvidia-smi. A note instead of rows means nvidia-smi could not
// answer (not installed, or failed: no driver); an error means it answered
// something else than its CSV format.
func (d Detector) query(ctx context.Context) ([]Device, string, error) {
	if d.Runner == nil {
		return nil, "nvidia-smi not asked", nil
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := d.Runner.Run(qctx, NvidiaSMIQuery(), nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("cannot run nvidia-smi: %w", err)
		}
		return nil, "nvidia-smi not available (" + err.Error() + ")", nil
	}
	if out.ExitCode != 0 {
		msg := strings.TrimSpace(firstLine(out.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(firstLine(out.Stdout))
		}
		return nil, fmt.Sprintf("nvidia-smi failed (exit status %d: %s)", out.ExitCode, msg), nil
	}
	rows, err := ParseNvidiaSMI(out.Stdout)
	if err != nil {
		return nil, "", err
	}
	return rows, "", nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line)
}

// ParseNvidiaSMI parses the output of NvidiaSMIQuery: one line per GPU,
// "minor_number, name, uuid" (nvidia-smi's CSV: fields separated by ", ",
// quoted when they hold a comma). A header line ("minor_number, name,
// uuid", as --format=csv without noheader prints) is skipped. Devices come
// back with Minor, Model and UUID set, in output order. Empty output is no
// GPU. A minor number that is not a number (nvidia-smi prints "[N/A]" for a
// GPU it cannot fully read), a repeated minor number or an empty name is an
// error.
func ParseNvidiaSMI(data []byte) ([]Device, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = 3
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	var devs []Device
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot parse nvidia-smi output: %w", err)
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if line == 1 && rec[0] == "minor_number" {
			continue
		}
		minor, err := strconv.Atoi(rec[0])
		if err != nil || minor < 0 || minor > 9999 || rec[0] != strconv.Itoa(minor) {
			return nil, fmt.Errorf("cannot parse nvidia-smi output line %d: minor number %q is not a number", line, rec[0])
		}
		if rec[1] == "" || strings.HasPrefix(rec[1], "[") {
			return nil, fmt.Errorf("cannot parse nvidia-smi output line %d: GPU name %q", line, rec[1])
		}
		if slices.ContainsFunc(devs, func(d Device) bool { return d.Minor == minor }) {
			return nil, fmt.Errorf("cannot parse nvidia-smi output line %d: minor number %d repeated", line, minor)
		}
		devs = append(devs, Device{Minor: minor, Model: rec[1], UUID: rec[2]})
	}
	return devs, nil
}

// TypeName turns a GPU product name into a GRES type the way Slurm's
// AutoDetect=nvml does (lower case, blanks to "_": "Tesla T4" → "tesla_t4"),
// so that switching to AutoDetect later keeps the types; characters a Gres=
// value cannot hold (":", ",", "=", ...) also become "_". It returns "" (an
// untyped GPU) for an empty name, or one that would start with a digit
// (Slurm would read it as a count).
func TypeName(model string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(model)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	t := b.String()
	if len(t) > 64 {
		t = t[:64]
	}
	if checkType(t) != nil {
		return ""
	}
	return t
}
