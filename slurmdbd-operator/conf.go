package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmdbd"
	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// confHeader starts slurmdbd.conf.
const confHeader = "# slurmdbd.conf, managed by the slurmdbd charm: set slurmdbd-conf-parameters instead of\n# editing it. Mode 0600, owned by slurm: it holds the database password.\n"

// candidatePrefix names candidate directories in ConfDir.
const candidatePrefix = ".candidate-dbd-"

// errBadPassword: slurmdbd.conf cannot carry the password (its value is never shown).
var errBadPassword = errors.New("the database password holds a double quote next to white space or at its start, which slurmdbd.conf cannot carry")

// renderConf is slurmdbd.conf for this host, the controller's authentication and target,
// with the extra parameters last.
func renderConf(host string, feat slurm.Features, t Target, extra []param) ([]byte, error) {
	managed := []param{
		{Key: "AuthType", Value: feat.AuthType},
		{Key: "DbdHost", Value: host},
		{Key: "DbdPort", Value: strconv.Itoa(slurmdbd.DefaultPort)},
		{Key: "SlurmUser", Value: SlurmUser},
		{Key: "LogFile", Value: LogFile},
		{Key: "PidFile", Value: PidFile},
		{Key: "StorageType", Value: "accounting_storage/mysql"},
		{Key: "StorageHost", Value: t.Endpoint.Host},
		{Key: "StoragePort", Value: strconv.Itoa(t.Endpoint.Port)},
		{Key: "StorageUser", Value: t.Credentials.Username},
		{Key: "StorageLoc", Value: t.Database},
	}
	var b bytes.Buffer
	b.WriteString(confHeader)
	for _, p := range managed {
		if err := (slurmconf.Params{p}).Check(); err != nil {
			return nil, err
		}
		b.WriteString(slurmconf.Params{p}.String() + "\n")
	}
	pass := slurmconf.Params{{Key: "StoragePass", Value: t.Credentials.Password.Reveal()}}
	if pass.Check() != nil {
		return nil, errBadPassword
	}
	b.WriteString(pass.String() + "\n")
	if len(extra) > 0 {
		b.WriteString("# slurmdbd-conf-parameters\n")
		for _, p := range extra {
			if err := (slurmconf.Params{p}).Check(); err != nil {
				return nil, &ConfigError{"slurmdbd-conf-parameters", err.Error()}
			}
			b.WriteString(slurmconf.Params{p}.String() + "\n")
		}
	}
	return b.Bytes(), nil
}

// hash is the SHA-256 of data, in hex.
func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeConf installs content as slurmdbd.conf once slurmdbd's own parser reads it from a
// candidate directory (0600, owned by slurm, as the live file). It reports whether the live
// file changed and returns slurmdbd's version. A candidate the parser refuses gives a
// *slurm.ConfigError and leaves the live file as it was.
// secret is scrubbed from the parser's messages (Slurm quotes lines it cannot parse).
func (h *hook) writeConf(ctx context.Context, content []byte, secret string) (bool, slurm.Version, error) {
	c := h.c
	live := c.Path(ConfFile)
	uid, gid, err := c.UserIDs(SlurmUser)
	if err != nil {
		return false, slurm.Version{}, err
	}
	if err := os.MkdirAll(c.Path(ConfDir), 0o755); err != nil {
		return false, slurm.Version{}, fmt.Errorf("cannot create %s: %w", ConfDir, err)
	}
	old, _ := os.ReadFile(live)
	own, verErr := slurm.ParseVersion(h.st.Version)
	if bytes.Equal(old, content) && verErr == nil {
		return false, own, nil
	}
	sweep(c.Path(ConfDir))
	dir, err := os.MkdirTemp(c.Path(ConfDir), candidatePrefix)
	if err != nil {
		return false, slurm.Version{}, fmt.Errorf("cannot create a candidate configuration: %w", err)
	}
	defer os.RemoveAll(dir)
	cand := filepath.Join(dir, "slurmdbd.conf")
	owner := &atomicfile.Owner{UID: uid, GID: gid}
	if err := atomicfile.Write(ctx, cand, content, atomicfile.Options{Mode: 0o600, Owner: owner, Reset: true}); err != nil {
		return false, slurm.Version{}, fmt.Errorf("cannot write the candidate slurmdbd.conf: %w", err)
	}
	v, err := c.client().CheckDbdConfig(ctx, dir)
	if err != nil {
		var ce *slurm.ConfigError
		if errors.As(err, &ce) {
			ce.Conf = ConfFile
			ce.File = strings.Replace(ce.File, dir, ConfDir, 1)
			for i, m := range ce.Messages {
				ce.Messages[i] = scrub(strings.ReplaceAll(m, dir, ConfDir), secret)
			}
			ce.Value = scrub(ce.Value, secret)
		}
		return false, slurm.Version{}, err
	}
	h.st.Version = v.String()
	if bytes.Equal(old, content) {
		return false, v, nil
	}
	if err := atomicfile.Write(ctx, live, content, atomicfile.Options{Mode: 0o600, Owner: owner, Reset: true}); err != nil {
		return false, slurm.Version{}, fmt.Errorf("cannot write %s: %w", ConfFile, err)
	}
	return true, v, nil
}

// scrub replaces secret in s.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "<redacted>")
}

// sweep removes candidate directories a killed hook left behind.
func sweep(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, candidatePrefix+"*"))
	for _, d := range old {
		_ = os.RemoveAll(d)
	}
}
