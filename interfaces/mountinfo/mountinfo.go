// Package mountinfo is charmed-hpc's `mount_info` relation interface, as the filesystem-client
// charm (charmed-hpc/filesystem-charms) and its library charms.filesystem_client.v0.mount_info
// (LIBAPI 0, LIBPATCH 1) speak it, both sides in Go: a principal charm that needs a shared
// filesystem asks its filesystem-client subordinate to mount it at a mountpoint, and the
// subordinate answers, per unit, whether it is mounted.
//
// Roles follow the library's classes, which are the reverse of the charms' endpoint roles: the
// principal (the library's MountRequires; here Requirer) declares `provides: mount` with
// interface mount_info, and filesystem-client (MountProvides; here Provider) declares
// `requires: mount`, scope container. Because the relation is container-scoped, each principal
// unit sees exactly the subordinate unit on its own machine.
//
//   - The principal's leader writes the application databag: MountInfo's fields, each a JSON
//     value as ops' Relation.save writes a dataclass: "mountpoint" (a JSON string, the absolute
//     path to mount at), "noexec", "nosuid", "nodev", "read_only" (JSON booleans).
//   - Each filesystem-client unit writes its unit databag: "mounted", "true" or "false" (plain
//     text, not JSON, as the library writes it).
//
// Decoding is strict: a missing mountpoint is ErrNotReady; a relative or unclean mountpoint,
// one over PATH_MAX, with control characters, whitespace or a comma (mount options and fstab
// cannot carry them), a value that is not the JSON type the library writes, a key the library
// does not write, or a "mounted" that is neither "true" nor "false" gives a *DataError naming
// the key, never a panic and never a partly decoded value.
package mountinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/charmed-slurm/operators/interfaces/databag"
)

// EndpointName is the endpoint's name on both sides (filesystem-client's `mount`).
const EndpointName = "mount"

// Application databag keys (the principal's) and the unit databag key (the client's).
const (
	KeyMountpoint = "mountpoint"
	KeyNoExec     = "noexec"
	KeyNoSUID     = "nosuid"
	KeyNoDev      = "nodev"
	KeyReadOnly   = "read_only"
	KeyMounted    = "mounted"
)

// MaxMountpointLen is PATH_MAX less its NUL.
const MaxMountpointLen = 4095

// ErrNotReady reports that the other side has not written its part yet. It is not a fault:
// wait for the next hook.
var ErrNotReady = errors.New("mount relation data not ready")

// DataError reports relation data that cannot be decoded (the interfaces' shared
// databag.Error, naming the mount relation). Field names the databag key.
type DataError = databag.Error

// Info is what the principal asks for: where to mount the filesystem and how.
type Info struct {
	// Mountpoint is the absolute path to mount at on the principal's machine.
	Mountpoint string
	NoExec     bool
	NoSUID     bool
	NoDev      bool
	ReadOnly   bool
}

// CheckMountpoint accepts an absolute, clean path other than "/", at most MaxMountpointLen
// bytes, without control characters, whitespace or commas.
func CheckMountpoint(p string) error {
	switch {
	case p == "":
		return errors.New("empty mountpoint")
	case len(p) > MaxMountpointLen:
		return fmt.Errorf("mountpoint longer than %d bytes", MaxMountpointLen)
	case !path.IsAbs(p):
		return fmt.Errorf("mountpoint %q is not an absolute path", truncate(p))
	case path.Clean(p) != p:
		return fmt.Errorf("mountpoint %q is not a clean path (want %q)", truncate(p), truncate(path.Clean(p)))
	case p == "/":
		return errors.New("mountpoint is the root directory")
	}
	if i := strings.IndexFunc(p, func(r rune) bool {
		return r == ',' || r == unicode.ReplacementChar || unicode.IsSpace(r) || unicode.IsControl(r)
	}); i >= 0 {
		return fmt.Errorf("mountpoint %q holds a comma, whitespace, a control character or invalid UTF-8", truncate(p))
	}
	return nil
}

// Encode renders the principal's application databag.
func (i Info) Encode() (map[string]string, error) {
	if err := CheckMountpoint(i.Mountpoint); err != nil {
		return nil, &DataError{Relation: "mount", Field: KeyMountpoint, Msg: err.Error()}
	}
	mp, err := json.Marshal(i.Mountpoint)
	if err != nil {
		return nil, &DataError{Relation: "mount", Field: KeyMountpoint, Msg: "cannot encode", Err: err}
	}
	return map[string]string{
		KeyMountpoint: string(mp),
		KeyNoExec:     encodeBool(i.NoExec),
		KeyNoSUID:     encodeBool(i.NoSUID),
		KeyNoDev:      encodeBool(i.NoDev),
		KeyReadOnly:   encodeBool(i.ReadOnly),
	}, nil
}

func encodeBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// DecodeInfo reads the principal's application databag. A bag without a mountpoint (or with
// an empty one, which the library reads as no request) is ErrNotReady; the option keys are
// optional (the library's defaults are false).
func DecodeInfo(bag map[string]string) (Info, error) {
	raw, ok := bag[KeyMountpoint]
	if !ok || raw == "" {
		return Info{}, ErrNotReady
	}
	var info Info
	var mp string
	if err := strictJSON(raw, &mp); err != nil {
		return Info{}, &DataError{Relation: "mount", Field: KeyMountpoint, Msg: "not a JSON string", Err: err}
	}
	if mp == "" {
		return Info{}, ErrNotReady
	}
	if err := CheckMountpoint(mp); err != nil {
		return Info{}, &DataError{Relation: "mount", Field: KeyMountpoint, Msg: err.Error()}
	}
	info.Mountpoint = mp
	for k, v := range bag {
		var dst *bool
		switch k {
		case KeyMountpoint:
			continue
		case KeyNoExec:
			dst = &info.NoExec
		case KeyNoSUID:
			dst = &info.NoSUID
		case KeyNoDev:
			dst = &info.NoDev
		case KeyReadOnly:
			dst = &info.ReadOnly
		default:
			return Info{}, &DataError{Relation: "mount", Field: truncate(k), Msg: "not a field of mount_info's MountInfo"}
		}
		b, err := decodeJSONBool(v)
		if err != nil {
			return Info{}, &DataError{Relation: "mount", Field: k, Msg: err.Error()}
		}
		*dst = b
	}
	return info, nil
}

// decodeJSONBool reads a JSON boolean (Relation.save writes json.dumps(True) = "true").
func decodeJSONBool(v string) (bool, error) {
	switch strings.TrimSpace(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a JSON boolean", truncate(v))
}

// strictJSON decodes one JSON value of v's type, refusing trailing data.
func strictJSON(raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// Mounted is what a filesystem-client unit reports.
type Mounted int

const (
	// Unreported: the unit has not said yet (no "mounted" key).
	Unreported Mounted = iota
	// NotMounted: "mounted" is "false" (not mounted yet, or unmounted).
	NotMounted
	// IsMounted: "mounted" is "true".
	IsMounted
)

func (m Mounted) String() string {
	switch m {
	case NotMounted:
		return "not mounted"
	case IsMounted:
		return "mounted"
	}
	return "unreported"
}

// EncodeMounted renders a filesystem-client unit's databag.
func EncodeMounted(mounted bool) map[string]string {
	return map[string]string{KeyMounted: encodeBool(mounted)}
}

// DecodeMounted reads a filesystem-client unit's databag. Keys other than "mounted" are left
// alone: Juju writes its own (ingress-address, private-address, egress-subnets) there.
func DecodeMounted(bag map[string]string) (Mounted, error) {
	v, ok := bag[KeyMounted]
	if !ok {
		return Unreported, nil
	}
	switch v {
	case "true":
		return IsMounted, nil
	case "false":
		return NotMounted, nil
	}
	return Unreported, &DataError{Relation: "mount", Field: KeyMounted, Msg: fmt.Sprintf("%q is neither \"true\" nor \"false\"", truncate(v))}
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
