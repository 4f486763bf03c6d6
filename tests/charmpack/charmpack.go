// Package charmpack packs a Go charm into a .charm file, the zip that `juju deploy` takes.
//
// A packed charm holds what charmcraft would produce for a charm whose parts build one static Go
// binary: metadata.yaml (name, summary, description, relations), config.yaml (config.options),
// actions.yaml, manifest.yaml (bases) and an executable dispatch. All of it is derived from the
// charm's charmcraft.yaml, so the source of truth stays in one file.
//
// Typical use, from the repository root:
//
//	err := charmpack.Pack(ctx, charmpack.Options{
//		Dir:    "slurmd-operator",      // holds charmcraft.yaml and the main package
//		Out:    "build/slurmd.charm",
//		GoArgv: []string{"go"},
//	})
package charmpack

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Options says what to pack and where.
type Options struct {
	// Dir is the charm's source folder: charmcraft.yaml and the main package of dispatch.
	Dir string
	// Out is the .charm file to write.
	Out string
	// GoArgv is the go command to build dispatch with (default {"go"}).
	GoArgv []string
	// Dispatch, when set, is an already built dispatch binary to pack instead of building one.
	Dispatch string
}

// Charmcraft is the part of charmcraft.yaml that a packed charm carries.
type Charmcraft struct {
	Name        string              `yaml:"name"`
	Title       string              `yaml:"title,omitempty"`
	Summary     string              `yaml:"summary"`
	Description string              `yaml:"description"`
	Base        string              `yaml:"base"`
	Platforms   map[string]any      `yaml:"platforms"`
	Provides    map[string]Endpoint `yaml:"provides,omitempty"`
	Requires    map[string]Endpoint `yaml:"requires,omitempty"`
	Peers       map[string]Endpoint `yaml:"peers,omitempty"`
	Config      *Config             `yaml:"config,omitempty"`
	Actions     map[string]any      `yaml:"actions,omitempty"`
}

// Endpoint is one relation endpoint.
type Endpoint struct {
	Interface string `yaml:"interface"`
	Limit     int    `yaml:"limit,omitempty"`
	Optional  bool   `yaml:"optional,omitempty"`
	Scope     string `yaml:"scope,omitempty"`
}

// Config holds the charm's options.
type Config struct {
	Options map[string]Option `yaml:"options"`
}

// Option is one config option.
type Option struct {
	Type        string `yaml:"type"`
	Default     any    `yaml:"default,omitempty"`
	Description string `yaml:"description,omitempty"`
}

// ReadCharmcraft reads and checks dir/charmcraft.yaml.
func ReadCharmcraft(dir string) (*Charmcraft, error) {
	path := filepath.Join(dir, "charmcraft.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read charm definition: %w", err)
	}
	var c Charmcraft
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	if c.Name == "" || c.Summary == "" || c.Description == "" {
		return nil, fmt.Errorf("%s: name, summary and description are required", path)
	}
	if c.Base == "" {
		return nil, fmt.Errorf("%s: base is required", path)
	}
	return &c, nil
}

// Files renders the YAML files of the packed charm, keyed by their name in the zip.
func (c *Charmcraft) Files() (map[string][]byte, error) {
	meta := map[string]any{
		"name":        c.Name,
		"summary":     c.Summary,
		"description": c.Description,
	}
	if c.Title != "" {
		meta["display-name"] = c.Title
	}
	for key, eps := range map[string]map[string]Endpoint{"provides": c.Provides, "requires": c.Requires, "peers": c.Peers} {
		if len(eps) > 0 {
			meta[key] = eps
		}
	}
	config := Config{Options: map[string]Option{}}
	if c.Config != nil {
		config = *c.Config
	}
	actions := c.Actions
	if actions == nil {
		actions = map[string]any{}
	}
	name, channel, ok := splitBase(c.Base)
	if !ok {
		return nil, fmt.Errorf("invalid base %q: want name@channel", c.Base)
	}
	var archs []string
	for arch := range c.Platforms {
		archs = append(archs, arch)
	}
	manifest := map[string]any{
		"charmcraft-version":    "3.2.0",
		"charmcraft-started-at": "1970-01-01T00:00:00Z",
		"bases":                 []map[string]any{{"name": name, "channel": channel, "architectures": archs}},
	}
	out := map[string][]byte{}
	for file, v := range map[string]any{"metadata.yaml": meta, "config.yaml": config, "actions.yaml": actions, "manifest.yaml": manifest} {
		b, err := yaml.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("cannot render %s: %w", file, err)
		}
		out[file] = b
	}
	return out, nil
}

func splitBase(base string) (name, channel string, ok bool) {
	for i := 0; i < len(base); i++ {
		if base[i] == '@' {
			return base[:i], base[i+1:], i > 0 && i < len(base)-1
		}
	}
	return "", "", false
}

// Pack builds dispatch (unless Options.Dispatch names one) and writes the .charm zip.
func Pack(ctx context.Context, opts Options) error {
	c, err := ReadCharmcraft(opts.Dir)
	if err != nil {
		return err
	}
	files, err := c.Files()
	if err != nil {
		return err
	}
	dispatch := opts.Dispatch
	if dispatch == "" {
		tmp, err := os.MkdirTemp("", "charmpack-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dispatch = filepath.Join(tmp, "dispatch")
		goArgv := opts.GoArgv
		if len(goArgv) == 0 {
			goArgv = []string{"go"}
		}
		abs, err := filepath.Abs(dispatch)
		if err != nil {
			return err
		}
		argv := append(append([]string{}, goArgv...), "build", "-trimpath", "-ldflags=-s -w", "-o", abs, ".")
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = opts.Dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cannot build dispatch for %s: %w\n%s", c.Name, err, out)
		}
	}
	bin, err := os.ReadFile(dispatch)
	if err != nil {
		return fmt.Errorf("cannot read dispatch: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.Out), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(opts.Out), ".charm-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	zw := zip.NewWriter(tmp)
	add := func(name string, mode os.FileMode, data []byte) error {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, bytes.NewReader(data))
		return err
	}
	for _, name := range []string{"metadata.yaml", "config.yaml", "actions.yaml", "manifest.yaml"} {
		if err := add(name, 0o644, files[name]); err != nil {
			return fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	if err := add("dispatch", 0o755, bin); err != nil {
		return fmt.Errorf("cannot write dispatch: %w", err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), opts.Out)
}
