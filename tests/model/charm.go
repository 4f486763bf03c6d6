package model

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/charmed-slurm/operators/tests/hosts"
)

// Charm is what the model knows about a charm: its metadata, config options and actions, read
// from charmcraft.yaml or from the metadata.yaml, config.yaml and actions.yaml of a packed charm.
type Charm struct {
	Name string `json:"name"`
	// Subordinate charms get no units of their own: a unit is added beside each unit of a
	// principal they are related to through a container-scoped endpoint.
	Subordinate bool                `json:"subordinate,omitempty"`
	Provides    map[string]Endpoint `json:"provides,omitempty"`
	Requires    map[string]Endpoint `json:"requires,omitempty"`
	Peers       map[string]Endpoint `json:"peers,omitempty"`
	Options     map[string]Option   `json:"options,omitempty"`
	Actions     map[string]Action   `json:"actions,omitempty"`
}

// Endpoint is one relation endpoint of a charm.
type Endpoint struct {
	Interface string `json:"interface" yaml:"interface"`
	Limit     int    `json:"limit,omitempty" yaml:"limit"`
	// Scope is "container" for an endpoint whose relation joins only the units of one
	// machine (a subordinate and its principal); "" or "global" otherwise.
	Scope string `json:"scope,omitempty" yaml:"scope"`
}

// Option is one config option: type is string, int, float, boolean or secret.
type Option struct {
	Type        string `json:"type" yaml:"type"`
	Default     any    `json:"default,omitempty" yaml:"default"`
	Description string `json:"description,omitempty" yaml:"description"`
}

// Action is one action: its parameters as a JSON schema subset.
type Action struct {
	Description          string           `json:"description,omitempty" yaml:"description"`
	Params               map[string]Param `json:"params,omitempty" yaml:"params"`
	Required             []string         `json:"required,omitempty" yaml:"required"`
	AdditionalProperties *bool            `json:"additionalProperties,omitempty" yaml:"additionalProperties"`
}

// Param is one action parameter: the JSON schema keywords the model checks (schema.go).
type Param struct {
	Type                 string           `json:"type,omitempty" yaml:"type"`
	Default              any              `json:"default,omitempty" yaml:"default"`
	Description          string           `json:"description,omitempty" yaml:"description"`
	Enum                 []any            `json:"enum,omitempty" yaml:"enum"`
	Minimum              *float64         `json:"minimum,omitempty" yaml:"minimum"`
	Maximum              *float64         `json:"maximum,omitempty" yaml:"maximum"`
	MinLength            *int             `json:"minLength,omitempty" yaml:"minLength"`
	MaxLength            *int             `json:"maxLength,omitempty" yaml:"maxLength"`
	Properties           map[string]Param `json:"properties,omitempty" yaml:"properties"`
	Required             []string         `json:"required,omitempty" yaml:"required"`
	AdditionalProperties *bool            `json:"additionalProperties,omitempty" yaml:"additionalProperties"`
}

type charmcraftFile struct {
	Name        string              `yaml:"name"`
	Subordinate bool                `yaml:"subordinate"`
	Provides    map[string]Endpoint `yaml:"provides"`
	Requires    map[string]Endpoint `yaml:"requires"`
	Peers       map[string]Endpoint `yaml:"peers"`
	Config      struct {
		Options map[string]Option `yaml:"options"`
	} `yaml:"config"`
	Actions map[string]Action `yaml:"actions"`
}

// ReadCharm reads a charm directory: charmcraft.yaml if present, else metadata.yaml with the
// optional config.yaml and actions.yaml of a packed charm.
func ReadCharm(dir string) (*Charm, error) {
	var f charmcraftFile
	data, err := os.ReadFile(filepath.Join(dir, "charmcraft.yaml"))
	switch {
	case err == nil:
		if err := yaml.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("cannot parse %s: %w", filepath.Join(dir, "charmcraft.yaml"), err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := readYAML(filepath.Join(dir, "metadata.yaml"), &f, true); err != nil {
			return nil, err
		}
		if err := readYAML(filepath.Join(dir, "config.yaml"), &f.Config, false); err != nil {
			return nil, err
		}
		if err := readYAML(filepath.Join(dir, "actions.yaml"), &f.Actions, false); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("cannot read charm: %w", err)
	}
	if f.Name == "" {
		return nil, fmt.Errorf("charm in %s has no name", dir)
	}
	c := &Charm{Name: f.Name, Subordinate: f.Subordinate, Provides: f.Provides, Requires: f.Requires, Peers: f.Peers, Options: f.Config.Options, Actions: f.Actions}
	for name, o := range c.Options {
		switch o.Type {
		case "string", "int", "float", "boolean", "secret":
		case "":
			o.Type = "string"
			c.Options[name] = o
		default:
			return nil, fmt.Errorf("charm %s: option %q has unknown type %q", c.Name, name, o.Type)
		}
		if o.Default != nil {
			v, err := convertOption(o.Type, o.Default)
			if err != nil {
				return nil, fmt.Errorf("charm %s: option %q default: %w", c.Name, name, err)
			}
			o.Default = v
			c.Options[name] = o
		}
	}
	for _, eps := range []map[string]Endpoint{c.Provides, c.Requires, c.Peers} {
		for name, ep := range eps {
			if ep.Interface == "" {
				return nil, fmt.Errorf("charm %s: endpoint %q has no interface", c.Name, name)
			}
			if ep.Scope != "" && ep.Scope != "global" && ep.Scope != "container" {
				return nil, fmt.Errorf("charm %s: endpoint %q has unknown scope %q", c.Name, name, ep.Scope)
			}
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "dispatch")); err != nil {
		return nil, fmt.Errorf("charm %s: cannot find dispatch: %w", c.Name, err)
	} else if st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("charm %s: dispatch is not executable", c.Name)
	}
	return c, nil
}

func readYAML(path string, v any, required bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if !required && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cannot read charm: %w", err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("cannot parse %s: %w", path, err)
	}
	return nil
}

// Endpoints returns every endpoint with its role ("provider", "requirer" or "peer").
func (c *Charm) endpoint(name string) (Endpoint, string, bool) {
	if ep, ok := c.Provides[name]; ok {
		return ep, "provider", true
	}
	if ep, ok := c.Requires[name]; ok {
		return ep, "requirer", true
	}
	if ep, ok := c.Peers[name]; ok {
		return ep, "peer", true
	}
	return Endpoint{}, "", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseOptionValue converts a command-line value to the option's type, as `juju config` does.
func (c *Charm) ParseOptionValue(key, value string) (any, error) {
	o, ok := c.Options[key]
	if !ok {
		return nil, fmt.Errorf("unknown option %q", key)
	}
	v, err := convertOption(o.Type, value)
	if err != nil {
		return nil, fmt.Errorf("option %q: %w", key, err)
	}
	return v, nil
}

func convertOption(typ string, v any) (any, error) {
	switch typ {
	case "string", "secret":
		switch x := v.(type) {
		case string:
			return x, nil
		case int, int64, float64, bool:
			return fmt.Sprint(x), nil
		}
	case "int":
		switch x := v.(type) {
		case int:
			return int64(x), nil
		case int64:
			return x, nil
		case float64:
			if x == float64(int64(x)) {
				return int64(x), nil
			}
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("expected int, got %q", x)
			}
			return n, nil
		}
		return nil, fmt.Errorf("expected int, got %v", v)
	case "float":
		switch x := v.(type) {
		case int:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, fmt.Errorf("expected float, got %q", x)
			}
			return f, nil
		}
		return nil, fmt.Errorf("expected float, got %v", v)
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("expected boolean, got %q", x)
			}
			return b, nil
		}
		return nil, fmt.Errorf("expected boolean, got %v", v)
	}
	return nil, fmt.Errorf("expected %s, got %v", typ, v)
}

// ExtractCharm unpacks a packed .charm (a zip) into dir, keeping the executable bits.
func ExtractCharm(path, dir string) error {
	r, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("cannot open charm %s: %w", path, err)
	}
	defer r.Close()
	for _, f := range r.File {
		name := filepath.Clean(f.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("cannot extract charm %s: bad path %q", path, f.Name)
		}
		dst := filepath.Join(dir, name)
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("cannot extract charm: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("cannot extract charm: %w", err)
		}
		mode := f.Mode().Perm()
		if mode == 0 {
			mode = 0o644
		}
		if name == "dispatch" {
			mode |= 0o755
		}
		if err := extractFile(f, dst, mode); err != nil {
			return fmt.Errorf("cannot extract charm %s: %w", path, err)
		}
	}
	return nil
}

func extractFile(f *zip.File, dst string, mode fs.FileMode) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if mode&0o111 == 0 {
		return writeNew(dst, rc, os.O_TRUNC, mode)
	}
	// An executable (dispatch) must be runnable by the hooks at once (hosts.WriteExecutable).
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	return hosts.WriteExecutable(dst, data, mode)
}
