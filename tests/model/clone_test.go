package model

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// populate sets every field reachable from v (a settable value) to something not zero: every
// map and slice gets one element, every pointer a value, so that a new field of State is
// covered without changing the test. Interfaces get a string (which JSON keeps as it is).
func populate(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		populate(v.Elem(), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		populate(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		populate(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		populate(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1795480000, 5).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				populate(v.Field(i), depth+1)
			}
		}
	default:
		setScalar(v, 7)
	}
}

// setScalar sets v, when it is a string, number or boolean, to a value made from n: another n
// gives another value.
func setScalar(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", n))
	case reflect.Bool:
		v.SetBool(n%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	}
}

// TestClone: State.clone gives what a JSON round trip of the state gives (how the model copied
// it before), for a state with every field set, and shares nothing with the original.
func TestClone(t *testing.T) {
	st := &State{}
	populate(reflect.ValueOf(st).Elem(), 0)
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := &State{}
	if err := json.Unmarshal(data, want); err != nil {
		t.Fatal(err)
	}
	want.fill()
	got := st.clone()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("clone differs from a JSON round trip (-want +got):\n%s", d)
	}
	// Change everything in the copy: the original stays as it was.
	before, _ := json.Marshal(st)
	populateOther(reflect.ValueOf(got).Elem(), 0)
	if after, _ := json.Marshal(st); string(after) != string(before) {
		t.Errorf("changing the clone changed the original:\n%s\n%s", before, after)
	}
}

// populateOther rewrites every string, number and boolean reachable from v in place (without
// replacing maps, slices or pointers), so that anything the clone shares with the original
// shows up changed there.
func populateOther(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() && v.Kind() == reflect.Pointer {
			populateOther(v.Elem(), depth+1)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			populateOther(e, depth+1)
			v.SetMapIndex(it.Key(), e)
		}
	case reflect.Slice:
		for i := range v.Len() {
			populateOther(v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				populateOther(v.Field(i), depth+1)
			}
		}
	default:
		setScalar(v, 8)
	}
}

// BenchmarkStateCopy compares the copy every hook takes of a 256-unit model: clone, and the
// JSON round trip the model used before.
func BenchmarkStateCopy(b *testing.B) {
	st := newState("bench", "uuid")
	st.Applications["slurmd"] = &Application{Name: "slurmd", Config: map[string]any{"a": "b"}}
	rel := &Relation{ID: 0, UnitData: map[string]map[string]string{}, Endpoints: []RelationEndpoint{{App: "slurmctld"}, {App: "slurmd"}}}
	st.Relations[0] = rel
	for i := range 256 {
		name := "slurmd/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		st.Units[name] = &Unit{Name: name, App: "slurmd", Ready: true}
		st.Machines[name] = &MachineState{ID: name, Address: "10.0.0.1", Unit: name}
		rel.UnitData[name] = map[string]string{"hostname": name, "node": name, "partition": "slurmd"}
	}
	st.fill()
	b.Run("clone", func(b *testing.B) {
		for b.Loop() {
			st.clone()
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			data, _ := json.Marshal(st)
			c := &State{}
			json.Unmarshal(data, c)
			c.fill()
		}
	})
}

// BenchmarkDecide is an agent's choice in a 256-unit model: the unit's remote state and the
// uniter's resolution over it (every agent pays it at each change of the model; compare with
// BenchmarkStateCopy/clone, which each hook pays once).
func BenchmarkDecide(b *testing.B) {
	st := newState("bench", "uuid")
	st.Applications["slurmd"] = &Application{Name: "slurmd", Charm: &Charm{Name: "slurmd"}, ConfigVersion: 1, Leader: "slurmd/aa"}
	st.Applications["slurmctld"] = &Application{Name: "slurmctld", Charm: &Charm{Name: "slurmctld"}, ConfigVersion: 1}
	rel := &Relation{ID: 0, Endpoints: []RelationEndpoint{{App: "slurmctld", Name: "slurmd"}, {App: "slurmd", Name: "slurmctld"}}}
	st.Relations[0] = rel
	st.Units["slurmctld/0"] = &Unit{Name: "slurmctld/0", App: "slurmctld", Ready: true}
	st.fill()
	var last *Unit
	for i := range 256 {
		name := "slurmd/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		u := &Unit{Name: name, App: "slurmd", Ready: true, Seen: UnitLocal{Installed: true, Started: true, ConfigVersion: 1,
			Relations: map[int]*RelationLocal{0: {Created: true, Joined: map[string]int{"slurmctld/0": 0}}},
			Secrets:   map[string]int{}, OwnerHooks: map[string]bool{}}}
		st.Units[name] = u
		last = u
	}
	st.Units["slurmctld/0"].Seen = UnitLocal{Relations: map[int]*RelationLocal{0: {Created: true}}}
	now := time.Now()
	for b.Loop() {
		rs := st.remoteState(last, 0, 0, now)
		decide(last, &rs)
	}
}
