package model

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Juju's hook retry strategy: 5 s, doubling, capped at 5 min.
func TestRetryBackoff(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for i := 0; i < 9; i++ {
		d = nextRetryDelay(d, DefaultHookRetry)
		got = append(got, d)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("retry delays (-want +got):\n%s", d)
	}
}

// ownerState is a started unit a/0, leader of a, owning one application secret.
func ownerState(sec *Secret) *State {
	s := newState("m", "uuid")
	s.Applications["a"] = &Application{Name: "a", Charm: &Charm{Name: "a"}, Leader: "a/0", ConfigVersion: 1}
	s.Units["a/0"] = &Unit{Name: "a/0", App: "a", Ready: true, Seen: UnitLocal{
		Installed: true, Leader: true, ConfigVersion: 1, Started: true, LeaderData: -1,
		Relations: map[int]*RelationLocal{}, Secrets: map[string]int{}, OwnerHooks: map[string]bool{},
	}}
	s.Secrets[sec.ID] = sec
	s.fill()
	return s
}

// next is the hook unit a/0 of s runs next at now.
func next(s *State, now time.Time) (Hook, bool) {
	u := s.Units["a/0"]
	rs := s.remoteState(u, 0, 0, now)
	return decide(u, &rs)
}

// The owner gets secret-rotate when the rotation falls due, once per due time; the next
// rotation is then one policy period later.
func TestSecretRotateHook(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	due := now.Add(-time.Minute)
	s := ownerState(&Secret{ID: "secret:x", OwnerApp: "a", Label: "l", RotatePolicy: "hourly", NextRotate: due,
		Revisions: []SecretRevision{{Revision: 1, Content: map[string]string{"key": "v"}}}})
	h, ok := next(s, now.Add(-2*time.Minute))
	if ok {
		t.Fatalf("before the rotation is due: %+v", h)
	}
	h, ok = next(s, now)
	if d := cmp.Diff(Hook{Kind: "secret-rotate", SecretID: "secret:x", SecretLabel: "l", Due: due}, h); !ok || d != "" {
		t.Fatalf("due rotation (-want +got):\n%s", d)
	}
	h.advance(s, s.Units["a/0"])
	if h, ok := next(s, now); ok {
		t.Errorf("rotate ran twice: %+v", h)
	}
	if got := s.Secrets["secret:x"].NextRotate; !got.Equal(due.Add(time.Hour)) {
		t.Errorf("next rotation %v, want %v", got, due.Add(time.Hour))
	}
	// A unit of the owning application that no longer leads resigns and gets no owner hook.
	s.Applications["a"].Leader = "a/1"
	s.Units["a/0"].Seen.LeaderData = s.Applications["a"].LeaderDataVersion
	if h, ok := next(s, now.Add(2*time.Hour)); ok {
		t.Errorf("non-leader got %+v", h)
	}
}
