package gres_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseCase is one table row of a parser test: input, and either the
// result or a part of the error.
type parseCase[T any] struct {
	name, in string
	want     T
	err      string
}

// runParseCases runs parse on every case in parallel subtests, comparing
// results with go-cmp and errors by substring.
func runParseCases[T any](t *testing.T, fn string, parse func(string) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%s(%q) = %v, %v; want error containing %q", fn, tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("%s(%q) (-want +got):\n%s", fn, tt.in, d)
			}
		})
	}
}
