// Package charmpack packs a Go charm into a .charm file, the zip that `juju deploy` takes.
//
// A packed charm holds what charmcraft 3 would produce for a charm whose parts build one static
// Go binary: metadata.yaml (name, display-name, summary, description, assumes, the links as
// docs/issues/source/website/maintainers, relations), config.yaml (config.options),
// actions.yaml, manifest.yaml (the base, with the platform's build-for architectures) and an
// executable dispatch; one archive per platform, written 0644 like any file a user deploys.
// All of it is derived from the charm's charmcraft.yaml, so the source of truth stays in one
// file; a key of charmcraft.yaml that charmpack does not model is refused, never dropped.
//
// The charms' own charmcraft.yaml parts build dispatch from the repository as charmcraft
// does; CraftBuild runs those steps (the go plugin's commands, organize) on a copy of the tree
// laid out as charmcraft lays it out (parts/<part>/src, build, install; prime), so that the
// build charmcraft runs is tested too.
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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Options says what to pack and where.
type Options struct {
	// Dir is the charm's source folder: charmcraft.yaml and the main package of dispatch.
	Dir string
	// Out is the .charm file to write. A charm with several platforms gets one archive per
	// platform, named as ArchivePath names them.
	Out string
	// GoArgv is the go command to build dispatch with (default {"go"}).
	GoArgv []string
	// Dispatch, when set, is an already built dispatch binary to pack instead of building one
	// (for every platform).
	Dispatch string
}

// Charmcraft is charmcraft.yaml as charmpack reads it: every key it carries into the packed
// charm, and the keys of the build (type, parts) it checks. Any other key is refused.
type Charmcraft struct {
	Type        string               `yaml:"type"`
	Name        string               `yaml:"name"`
	Title       string               `yaml:"title,omitempty"`
	Summary     string               `yaml:"summary"`
	Description string               `yaml:"description"`
	Links       *Links               `yaml:"links,omitempty"`
	Assumes     []any                `yaml:"assumes,omitempty"`
	Base        string               `yaml:"base"`
	BuildBase   string               `yaml:"build-base,omitempty"`
	Platforms   map[string]*Platform `yaml:"platforms"`
	Parts       map[string]Part      `yaml:"parts,omitempty"`
	Provides    map[string]Endpoint  `yaml:"provides,omitempty"`
	Requires    map[string]Endpoint  `yaml:"requires,omitempty"`
	Peers       map[string]Endpoint  `yaml:"peers,omitempty"`
	Subordinate bool                 `yaml:"subordinate,omitempty"`
	Config      *Config              `yaml:"config,omitempty"`
	Actions     map[string]any       `yaml:"actions,omitempty"`
}

// Links are charmcraft's links; each goes into metadata.yaml under Juju's name for it.
type Links struct {
	Documentation string   `yaml:"documentation,omitempty"`
	Issues        []string `yaml:"issues,omitempty"`
	Source        []string `yaml:"source,omitempty"`
	Website       []string `yaml:"website,omitempty"`
	Contact       []string `yaml:"contact,omitempty"`
}

// UnmarshalYAML accepts a string or a list of strings for the list-valued links, as
// charmcraft does.
func (l *Links) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Documentation string    `yaml:"documentation"`
		Issues        stringsOr `yaml:"issues"`
		Source        stringsOr `yaml:"source"`
		Website       stringsOr `yaml:"website"`
		Contact       stringsOr `yaml:"contact"`
	}
	if err := decodeStrict(n, &raw); err != nil {
		return err
	}
	*l = Links{Documentation: raw.Documentation, Issues: raw.Issues, Source: raw.Source, Website: raw.Website, Contact: raw.Contact}
	return nil
}

type stringsOr []string

func (s *stringsOr) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = []string{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*s = l
	return nil
}

// Platform is one entry of platforms: where the charm builds and what it runs on. An empty
// entry (amd64:) is the shorthand for build-on and build-for both the entry's name.
type Platform struct {
	BuildOn  []string `yaml:"build-on"`
	BuildFor []string `yaml:"build-for"`
}

// Part is one charmcraft part. charmpack reads the keys its build uses and runs them in
// CraftBuild.
type Part struct {
	Plugin           string              `yaml:"plugin"`
	Source           string              `yaml:"source"`
	SourceType       string              `yaml:"source-type,omitempty"`
	SourceSubdir     string              `yaml:"source-subdir,omitempty"`
	After            []string            `yaml:"after,omitempty"`
	BuildSnaps       []string            `yaml:"build-snaps,omitempty"`
	BuildPackages    []string            `yaml:"build-packages,omitempty"`
	BuildEnvironment []map[string]string `yaml:"build-environment,omitempty"`
	Organize         map[string]string   `yaml:"organize,omitempty"`
	Prime            []string            `yaml:"prime,omitempty"`
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

// decodeStrict decodes n into v, refusing keys v does not have.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// ReadCharmcraft reads and checks dir/charmcraft.yaml. Keys charmpack does not model are
// refused (charmcraft would put them in the charm; dropping them would deploy another charm).
func ReadCharmcraft(dir string) (*Charmcraft, error) {
	path := filepath.Join(dir, "charmcraft.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read charm definition: %w", err)
	}
	var c Charmcraft
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("cannot parse %s (charmpack refuses keys it does not carry into the charm): %w", path, err)
	}
	if c.Type != "charm" {
		return nil, fmt.Errorf("%s: type is %q, want charm", path, c.Type)
	}
	if c.Name == "" || c.Summary == "" || c.Description == "" {
		return nil, fmt.Errorf("%s: name, summary and description are required", path)
	}
	if c.Base == "" {
		return nil, fmt.Errorf("%s: base is required", path)
	}
	if _, _, ok := splitBase(c.Base); !ok {
		return nil, fmt.Errorf("%s: invalid base %q: want name@channel", path, c.Base)
	}
	if len(c.Platforms) == 0 {
		return nil, fmt.Errorf("%s: platforms is required", path)
	}
	for _, name := range sortedKeys(c.Platforms) {
		if _, err := c.BuildFor(name); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &c, nil
}

// PlatformNames lists the platforms, sorted.
func (c *Charmcraft) PlatformNames() []string { return sortedKeys(c.Platforms) }

// BuildFor is the architecture platform name runs on: its build-for, or its name for the
// shorthand entry. charmcraft allows one build-for architecture per charm platform.
func (c *Charmcraft) BuildFor(name string) (string, error) {
	p, ok := c.Platforms[name]
	if !ok {
		return "", fmt.Errorf("no platform %q", name)
	}
	if p == nil || len(p.BuildFor) == 0 && len(p.BuildOn) == 0 {
		if !knownArch[name] {
			return "", fmt.Errorf("platform %q: a shorthand platform must be named after an architecture", name)
		}
		return name, nil
	}
	if len(p.BuildFor) != 1 || len(p.BuildOn) == 0 {
		return "", fmt.Errorf("platform %q: want build-on and exactly one build-for architecture", name)
	}
	arch := p.BuildFor[0]
	if strings.Contains(arch, ":") { // base:arch form
		arch = arch[strings.LastIndex(arch, ":")+1:]
	}
	if !knownArch[arch] {
		return "", fmt.Errorf("platform %q: unknown build-for architecture %q", name, arch)
	}
	return arch, nil
}

// knownArch are the architectures Juju knows, and GOARCH for each.
var knownArch = map[string]bool{"amd64": true, "arm64": true, "ppc64el": true, "s390x": true, "riscv64": true}

func goArch(arch string) string {
	if arch == "ppc64el" {
		return "ppc64le"
	}
	return arch
}

// ArchivePath is the archive Pack writes for platform: out itself for a charm with one
// platform, else out with "_<platform>" before ".charm" (charmcraft's naming).
func (c *Charmcraft) ArchivePath(out, platform string) string {
	if len(c.Platforms) == 1 {
		return out
	}
	return strings.TrimSuffix(out, ".charm") + "_" + platform + ".charm"
}

// Files renders the YAML files of the charm packed for platform, keyed by their name in the zip.
func (c *Charmcraft) Files(platform string) (map[string][]byte, error) {
	arch, err := c.BuildFor(platform)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{
		"name":        c.Name,
		"summary":     c.Summary,
		"description": c.Description,
	}
	if c.Title != "" {
		meta["display-name"] = c.Title
	}
	if len(c.Assumes) > 0 {
		meta["assumes"] = c.Assumes
	}
	if c.Subordinate {
		meta["subordinate"] = true
	}
	if l := c.Links; l != nil {
		for key, v := range map[string][]string{"issues": l.Issues, "source": l.Source, "website": l.Website, "maintainers": l.Contact} {
			if len(v) > 0 {
				meta[key] = v
			}
		}
		if l.Documentation != "" {
			meta["docs"] = l.Documentation
		}
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
	name, channel, _ := splitBase(c.Base)
	manifest := map[string]any{
		"charmcraft-version":    "3.2.0",
		"charmcraft-started-at": "1970-01-01T00:00:00Z",
		"bases":                 []map[string]any{{"name": name, "channel": channel, "architectures": []string{arch}}},
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
	name, channel, found := strings.Cut(base, "@")
	return name, channel, found && name != "" && channel != ""
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Pack builds dispatch for each platform (unless Options.Dispatch names one) and writes one
// .charm zip per platform (ArchivePath), mode 0644.
func Pack(ctx context.Context, opts Options) error {
	c, err := ReadCharmcraft(opts.Dir)
	if err != nil {
		return err
	}
	for _, platform := range c.PlatformNames() {
		if err := packPlatform(ctx, c, opts, platform); err != nil {
			return err
		}
	}
	return nil
}

func packPlatform(ctx context.Context, c *Charmcraft, opts Options, platform string) error {
	files, err := c.Files(platform)
	if err != nil {
		return err
	}
	arch, _ := c.BuildFor(platform)
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
		argv := append(append([]string{}, goArgv...), "build", "-trimpath", "-ldflags=-s -w", "-o", dispatch, ".")
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = opts.Dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+goArch(arch))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cannot build dispatch for %s (%s): %w\n%s", c.Name, platform, err, out)
		}
	}
	bin, err := os.ReadFile(dispatch)
	if err != nil {
		return fmt.Errorf("cannot read dispatch: %w", err)
	}
	return writeArchive(c.ArchivePath(opts.Out, platform), files, bin)
}

// writeArchive writes the charm zip atomically, readable by everyone (0644): a charm packed
// by root must deploy for any user.
func writeArchive(out string, files map[string][]byte, dispatch []byte) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".charm-*")
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
		_, err = w.Write(data)
		return err
	}
	for _, name := range []string{"metadata.yaml", "config.yaml", "actions.yaml", "manifest.yaml"} {
		if err := add(name, 0o644, files[name]); err != nil {
			return fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	if err := add("dispatch", 0o755, dispatch); err != nil {
		return fmt.Errorf("cannot write dispatch: %w", err)
	}
	if err := zw.Close(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
