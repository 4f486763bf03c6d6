package charm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/charmed-slurm/operators/libs/atomicfile"
	"github.com/charmed-slurm/operators/libs/juju"
)

// recordVersion is the version of the relation record's format; a record of another version
// is not read.
const recordVersion = 1

// maxRecordSize bounds the relation record read: a larger file is not a record of ours.
const maxRecordSize = 1 << 20

// relationRecord is what relation-ids answered for each endpoint the unit listed, kept from
// one hook to the next and brought up to date by the relation hooks (Lifecycle's
// RelationRecord).
type relationRecord struct {
	Version   int                          `json:"version"`
	Endpoints map[string][]juju.RelationID `json:"endpoints"`
}

// recordPath is the relation record's path: name in the charm directory, or name itself
// when it is absolute; "" when there is no record (name empty, or no charm directory).
func recordPath(name, charmDir string) string {
	switch {
	case name == "":
		return ""
	case filepath.IsAbs(name):
		return name
	case charmDir == "":
		return ""
	}
	return filepath.Join(charmDir, name)
}

// loadRecord reads the record at path. An absent, unreadable, oversized or invalid record
// (an id that is no relation id of its endpoint, an unknown version) is no record: every
// endpoint is then listed by relation-ids again.
func loadRecord(path string) map[string][]juju.RelationID {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordSize+1))
	var rec relationRecord
	if err != nil || len(data) > maxRecordSize || json.Unmarshal(data, &rec) != nil || rec.Version != recordVersion {
		return nil
	}
	for ep, ids := range rec.Endpoints {
		for _, id := range ids {
			if e, _, err := id.Parse(); err != nil || e != ep {
				return nil
			}
		}
		if ids == nil {
			rec.Endpoints[ep] = []juju.RelationID{}
		}
	}
	return rec.Endpoints
}

// applyEvent brings the record up to date with ev: a hook of a relation proves the relation
// is there (relation-created is the first hook of every relation on every unit), and in its
// relation-broken hook it is gone (Juju leaves it out of relation-ids in that hook). An
// upgrade-charm trusts no record of the previous charm's. Only endpoints recorded already
// change: an endpoint never listed is listed by relation-ids.
func applyEvent(rec map[string][]juju.RelationID, ev juju.Event) map[string][]juju.RelationID {
	if ev.Kind == juju.UpgradeCharm {
		return nil
	}
	if !ev.Kind.IsRelation() || ev.Relation.Endpoint() != ev.Endpoint {
		return rec
	}
	ids, ok := rec[ev.Endpoint]
	if !ok {
		return rec
	}
	ids = slices.DeleteFunc(slices.Clone(ids), func(id juju.RelationID) bool { return id == ev.Relation })
	if ev.Kind != juju.RelationBroken {
		ids = append(ids, ev.Relation)
		slices.SortFunc(ids, func(a, b juju.RelationID) int {
			_, x, _ := a.Parse()
			_, y, _ := b.Parse()
			return x - y
		})
	}
	rec[ev.Endpoint] = ids
	return rec
}

// beginRecord loads the relation record at path (none when path is ""), hands what it
// knows, with hc's event applied, to hc's relation tools, and returns it encoded as loaded.
func beginRecord(hc *juju.HookContext, path string) []byte {
	if path == "" {
		return nil
	}
	rec := loadRecord(path)
	data, _ := encodeRecord(rec)
	for ep, ids := range applyEvent(rec, hc.Event) {
		hc.Relations.KnowIDs(ep, ids)
	}
	return data
}

// saveRecord saves what hc's relation tools listed in the hook (the record given to them
// and the endpoints relation-ids listed) at path, if it differs from loaded. A record that
// cannot be saved is removed (the next hook lists every endpoint again); only when it can
// be neither saved nor removed is that an error.
func saveRecord(ctx context.Context, hc *juju.HookContext, path string, loaded []byte) error {
	if path == "" {
		return nil
	}
	data, err := encodeRecord(hc.Relations.ListedIDs())
	if err == nil && bytes.Equal(data, loaded) {
		return nil
	}
	if err == nil {
		err = atomicfile.Write(ctx, path, data, atomicfile.Options{Mode: 0o600, MkdirMode: 0o700})
	}
	if err == nil {
		return nil
	}
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(fmt.Errorf("cannot save the relation record: %w", err), fmt.Errorf("cannot remove the relation record: %w", rerr))
	}
	return nil
}

func encodeRecord(eps map[string][]juju.RelationID) ([]byte, error) {
	rec := relationRecord{Version: recordVersion, Endpoints: maps.Clone(eps)}
	if rec.Endpoints == nil {
		rec.Endpoints = map[string][]juju.RelationID{}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
