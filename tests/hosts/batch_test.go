package hosts

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunBatch: the steps reach the command's standard input one a line, words joined by a
// space; a word that the batch reader would split or take apart is refused before anything
// runs, and a failing command's error carries its input.
func TestRunBatch(t *testing.T) {
	ctx := context.Background()
	want := "link set lo up\naddr add 10.0.0.2/16 dev eth0\n"
	check := []string{"sh", "-c", `[ "$(cat; echo .)" = "$1." ]`, "sh", want}
	if err := runBatch(ctx, check, [][]string{{"link", "set", "lo", "up"}, {"addr", "add", "10.0.0.2/16", "dev", "eth0"}}); err != nil {
		t.Errorf("the batch's input is not %q: %v", want, err)
	}
	for _, word := range []string{"", "a b", "a\nb", `a"b`, "a'b", `a\b`, "a#b", "a\tb"} {
		err := runBatch(ctx, []string{"sh", "-c", "cat >/dev/null"}, [][]string{{"link", word}})
		if err == nil {
			t.Errorf("word %q: not refused", word)
		}
	}
	var ce *CommandError
	if err := runBatch(ctx, []string{"sh", "-c", "cat >/dev/null; exit 3"}, [][]string{{"link", "set", "x"}}); !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Argv, " "), "link set x") {
		t.Errorf("failing batch: %v, want a CommandError naming its input", err)
	}
}
