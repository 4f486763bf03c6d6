package juju

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SecretOwner is who owns a new secret.
type SecretOwner string

// Secret owners: the application (managed by its leader; the default) or
// the unit that creates it.
const (
	OwnerApplication SecretOwner = "application"
	OwnerUnit        SecretOwner = "unit"
)

// SecretAddOptions are secret-add's optional flags.
type SecretAddOptions struct {
	Label       string      // --label
	Description string      // --description
	Owner       SecretOwner // --owner; empty means Juju's default, application
}

// SecretGetOptions are secret-get's optional flags.
type SecretGetOptions struct {
	// Label identifies the secret when the id is empty; with an id, it
	// sets this consumer's label for the secret.
	Label string
	// Peek reads the latest revision this once; Refresh reads it and keeps
	// tracking it. Without either, a consumer keeps reading the revision
	// it first read.
	Peek, Refresh bool
}

// SecretSetOptions are secret-set's optional flags.
type SecretSetOptions struct {
	Label       string // --label
	Description string // --description
}

// SecretInfo is a secret's metadata as secret-info-get prints it.
type SecretInfo struct {
	ID          SecretID       `json:"-"`
	Revision    int            `json:"revision"`
	Label       string         `json:"label"`
	Owner       SecretOwner    `json:"owner"`
	Description string         `json:"description,omitempty"`
	Rotation    string         `json:"rotation,omitempty"`
	Expiry      *time.Time     `json:"expiry,omitempty"`
	Rotates     *time.Time     `json:"rotates,omitempty"`
	Access      []SecretAccess `json:"access,omitempty"`
}

// SecretAccess is one grant in SecretInfo.
type SecretAccess struct {
	Target string `json:"target"`
	Scope  string `json:"scope"`
	Role   string `json:"role"`
}

// Secrets runs the secret tools: secret-add, secret-get, secret-set,
// secret-grant, secret-revoke, secret-remove, secret-info-get, secret-ids.
//
// Secret content is passed as key=value arguments, as Juju documents;
// keys are lowercase letters, digits and '-', at least 3 characters.
// Errors never show the values (see HookToolError).
type Secrets struct{ Runner Runner }

// Add creates a secret and returns its id (secret:<id>):
// secret-add [--label L] [--description D] [--owner O] key=value ...
func (c Secrets) Add(ctx context.Context, content map[string]string, opts SecretAddOptions) (SecretID, error) {
	if len(content) == 0 {
		return "", fmt.Errorf("cannot add secret: empty content")
	}
	args := []string{"secret-add"}
	if opts.Label != "" {
		args = append(args, "--label", opts.Label)
	}
	if opts.Description != "" {
		args = append(args, "--description", opts.Description)
	}
	if opts.Owner != "" {
		args = append(args, "--owner", string(opts.Owner))
	}
	out, err := run(ctx, c.Runner, nil, append(args, keyValueArgs(content)...)...)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("cannot decode output of secret-add: %q is not a secret id", id)
	}
	return NormalizeSecretID(id), nil
}

// Get reads a secret's content: secret-get <id> [--label L]
// [--peek|--refresh] --format=json. With an empty id the secret is found by
// opts.Label.
func (c Secrets) Get(ctx context.Context, id SecretID, opts SecretGetOptions) (map[string]string, error) {
	if id == "" && opts.Label == "" {
		return nil, fmt.Errorf("cannot get secret: neither id nor label given")
	}
	if opts.Peek && opts.Refresh {
		return nil, fmt.Errorf("cannot get secret %s: both peek and refresh given", id)
	}
	args := []string{"secret-get"}
	if id != "" {
		args = append(args, string(id))
	}
	if opts.Label != "" {
		args = append(args, "--label", opts.Label)
	}
	if opts.Peek {
		args = append(args, "--peek")
	}
	if opts.Refresh {
		args = append(args, "--refresh")
	}
	var content map[string]string
	if err := runJSON(ctx, c.Runner, &content, append(args, "--format=json")...); err != nil {
		return nil, err
	}
	return content, nil
}

// Set publishes new content as a new revision (and/or changes the label or
// description): secret-set <id> [--label L] [--description D] key=value ...
func (c Secrets) Set(ctx context.Context, id SecretID, content map[string]string, opts SecretSetOptions) error {
	args := []string{"secret-set", string(id)}
	if opts.Label != "" {
		args = append(args, "--label", opts.Label)
	}
	if opts.Description != "" {
		args = append(args, "--description", opts.Description)
	}
	_, err := run(ctx, c.Runner, nil, append(args, keyValueArgs(content)...)...)
	return err
}

// Grant lets the remote application of relation rel (or only its unit
// unit, if not empty) read the secret: secret-grant <id> -r <rel>
// [--unit U]. The grant ends with the relation.
func (c Secrets) Grant(ctx context.Context, id SecretID, rel RelationID, unit string) error {
	args := []string{"secret-grant", string(id), "-r", string(rel)}
	if unit != "" {
		args = append(args, "--unit", unit)
	}
	_, err := run(ctx, c.Runner, nil, args...)
	return err
}

// Revoke withdraws the grant to the remote application of relation rel:
// secret-revoke <id> -r <rel>.
func (c Secrets) Revoke(ctx context.Context, id SecretID, rel RelationID) error {
	_, err := run(ctx, c.Runner, nil, "secret-revoke", string(id), "-r", string(rel))
	return err
}

// RevokeUnit withdraws a grant to one unit: secret-revoke <id> --unit U.
func (c Secrets) RevokeUnit(ctx context.Context, id SecretID, unit string) error {
	_, err := run(ctx, c.Runner, nil, "secret-revoke", string(id), "--unit", unit)
	return err
}

// Remove removes one revision (revision > 0) or the whole secret
// (revision 0): secret-remove <id> [--revision N].
func (c Secrets) Remove(ctx context.Context, id SecretID, revision int) error {
	args := []string{"secret-remove", string(id)}
	if revision > 0 {
		args = append(args, "--revision", strconv.Itoa(revision))
	}
	_, err := run(ctx, c.Runner, nil, args...)
	return err
}

// Info reads the metadata of a secret this unit owns:
// secret-info-get <id> --format=json.
func (c Secrets) Info(ctx context.Context, id SecretID) (SecretInfo, error) {
	return c.info(ctx, "secret-info-get", string(id), "--format=json")
}

// InfoByLabel is Info for the owned secret labelled label:
// secret-info-get --label L --format=json.
func (c Secrets) InfoByLabel(ctx context.Context, label string) (SecretInfo, error) {
	return c.info(ctx, "secret-info-get", "--label", label, "--format=json")
}

func (c Secrets) info(ctx context.Context, args ...string) (SecretInfo, error) {
	var out map[string]SecretInfo
	if err := runJSON(ctx, c.Runner, &out, args...); err != nil {
		return SecretInfo{}, err
	}
	if len(out) != 1 {
		return SecretInfo{}, fmt.Errorf("cannot decode output of secret-info-get: want one secret, got %d", len(out))
	}
	var info SecretInfo
	for id, i := range out { // the one entry
		info = i
		info.ID = NormalizeSecretID(id)
	}
	return info, nil
}

// IDs lists the secrets this unit's application (or unit) owns, as
// secret:<id>, sorted: secret-ids --format=json.
func (c Secrets) IDs(ctx context.Context) ([]SecretID, error) {
	var raw []string
	if err := runJSON(ctx, c.Runner, &raw, "secret-ids", "--format=json"); err != nil {
		return nil, err
	}
	ids := make([]SecretID, 0, len(raw))
	for _, s := range raw {
		ids = append(ids, NormalizeSecretID(s))
	}
	slices.Sort(ids)
	return ids, nil
}

// keyValueArgs turns m into key=value arguments, sorted by key (secret
// content, action results).
func keyValueArgs(m map[string]string) []string {
	args := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		args = append(args, k+"="+m[k])
	}
	return args
}
