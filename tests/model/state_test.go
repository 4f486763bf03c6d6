package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStateWriter(t *testing.T) {
	t.Run("latest state wins", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.json")
		w := newStateWriter(path)
		var wg sync.WaitGroup
		var mu sync.Mutex // puts in order, as under the model's lock
		last := 0
		for i := 1; i <= 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				last++
				w.put([]byte(fmt.Sprintf(`{"n":%d}`, last)))
			}()
		}
		wg.Wait()
		if err := w.wait(w.put([]byte(`{"final":true}`))); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff("{\n  \"final\": true\n}", string(got)); d != "" {
			t.Errorf("state file differs (-want +got):\n%s", d)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("state file mode %v, want 0600", st.Mode().Perm())
		}
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".state.json.*"))
		if len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})
	t.Run("write error", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing", "state.json")
		w := newStateWriter(path)
		err := w.wait(w.put([]byte("{}")))
		if err == nil || !strings.Contains(err.Error(), "cannot save model state") {
			t.Fatalf("wait = %v, want a save error", err)
		}
	})
	t.Run("wait for an older generation", func(t *testing.T) {
		w := newStateWriter(filepath.Join(t.TempDir(), "state.json"))
		g := w.put([]byte(`{"a":1}`))
		if err := w.wait(w.put([]byte(`{"b":2}`))); err != nil {
			t.Fatal(err)
		}
		if err := w.wait(g); err != nil {
			t.Fatal(err)
		}
	})
}
