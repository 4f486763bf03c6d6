package juju

import (
	"encoding/json"
	"strings"
)

// idsKey is the read memo's key of relation-ids <endpoint> --format=json.
func idsKey(endpoint string) string {
	return strings.Join([]string{"relation-ids", endpoint, "--format=json"}, "\x00")
}

// KnowIDs makes IDs answer ids for endpoint for the rest of this hook without running
// relation-ids: for a charm that keeps the relations it saw from one hook to the next
// (charm.Lifecycle's RelationRecord). It does nothing on Relations without a memo (not built
// by NewHookContext) or for an endpoint listed already in this hook.
func (c Relations) KnowIDs(endpoint string, ids []RelationID) {
	if c.memo == nil {
		return
	}
	if ids == nil {
		ids = []RelationID{}
	}
	out, err := json.Marshal(ids)
	if err != nil {
		return
	}
	c.memo.asked(endpoint)
	c.memo.mu.Lock()
	defer c.memo.mu.Unlock()
	if c.memo.out == nil {
		c.memo.out = map[string]*memoRead{}
	}
	if _, ok := c.memo.out[idsKey(endpoint)]; !ok {
		e := &memoRead{done: make(chan struct{}), out: out}
		close(e.done)
		c.memo.out[idsKey(endpoint)] = e
	}
}

// ListedIDs returns the relations IDs answered in this hook, by endpoint: those relation-ids
// listed and those KnowIDs gave. An answer that does not decode, and a relation-ids still
// running, are left out.
func (c Relations) ListedIDs() map[string][]RelationID {
	listed := map[string][]RelationID{}
	if c.memo == nil {
		return listed
	}
	c.memo.mu.Lock()
	defer c.memo.mu.Unlock()
	for ep := range c.memo.endpoints {
		e, ok := c.memo.out[idsKey(ep)]
		if !ok {
			continue // its relation-ids failed
		}
		select {
		case <-e.done:
		default:
			continue // still running
		}
		var ids []RelationID
		if e.err != nil || decodeJSON(e.out, &ids) != nil {
			continue
		}
		if ids == nil {
			ids = []RelationID{}
		}
		listed[ep] = ids
	}
	return listed
}
