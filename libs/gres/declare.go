package gres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmed-slurm/operators/libs/hostlist"
)

// ParseDeclaration parses generic resources an administrator declares for
// a machine (the slurmd charm's option), as gres.conf-like entries
// separated by ";" or new lines, each of space-separated key=value words:
//
//	Name=fpga Type=u250 File=/dev/xclmgmt[0-1]; Name=bandwidth Count=20G
//
// Keys (case-insensitive, each at most once): Name (required), Type, Count
// and File (a device path or a bracketed range of them, as gres.conf takes
// it; one unit per file). With File, Count may be left out and must
// otherwise equal the number of files; without File, Count is required and
// the resource is count-only. A GPU (Name=gpu) needs File. NodeName,
// AutoDetect and any other gres.conf key are refused: the node's name is the
// charm's to set, and Debian's Slurm has no NVML or RSMI detection.
// Empty input declares nothing. The result is validated as a Set.
func ParseDeclaration(s string) (Set, error) {
	var set Set
	entries := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' })
	for _, entry := range entries {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		r, err := parseEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("invalid generic resource %q: %w", strings.TrimSpace(entry), err)
		}
		set = append(set, r)
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	return set, nil
}

func parseEntry(entry string) (Resource, error) {
	var r Resource
	seen := map[string]bool{}
	var count string
	for _, w := range strings.Fields(entry) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || v == "" {
			return Resource{}, fmt.Errorf("%q is not key=value", w)
		}
		key := strings.ToLower(k)
		if seen[key] {
			return Resource{}, fmt.Errorf("key %s given twice", k)
		}
		seen[key] = true
		switch key {
		case "name":
			r.Name = v
		case "type":
			r.Type = v
		case "count":
			count = v
		case "file":
			files, err := hostlist.Expand(v)
			if err != nil {
				return Resource{}, fmt.Errorf("invalid File %q: %w", v, err)
			}
			r.Files = files
		case "nodename":
			return Resource{}, errors.New("key NodeName is set by the charm (the node's own name)")
		case "autodetect":
			return Resource{}, errors.New("key AutoDetect is not supported (Debian's Slurm has no NVML or RSMI plugin)")
		default:
			return Resource{}, fmt.Errorf("unknown key %s (want Name, Type, Count or File)", k)
		}
	}
	if r.Name == "" {
		return Resource{}, errors.New("key Name is required")
	}
	switch {
	case count != "":
		n, err := ParseCount(count)
		if err != nil {
			return Resource{}, err
		}
		r.Count = n
	case len(r.Files) > 0:
		r.Count = uint64(len(r.Files))
	default:
		return Resource{}, errors.New("key Count or File is required")
	}
	return r, nil
}
