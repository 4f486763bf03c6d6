// Command testsummary reads `go test -json` output and prints what a plain `go test` prints
// (failed tests' output, build errors, each package's closing line) plus a `--- SKIP` line
// with its reason for every skipped test, then a table of passed, failed and skipped tests per
// package and the closing line "N passed, N failed, N skipped in N packages".
//
//	go test -json ./... | testsummary [-ci] [-helpers TestA,TestB]        # streams, then sums up
//	testsummary [-ci] [-helpers ...] -quiet unit.json integration.json    # the table of saved runs
//
// It exits 1 when a test or a package failed, and under -ci (default: CI=true in the
// environment) also when a test was skipped that is not one of the named helper tests (a
// helper test skips itself unless another test runs it).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv("CI") == "true"))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, ciEnv bool) int {
	fs := flag.NewFlagSet("testsummary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ci := fs.Bool("ci", ciEnv, "fail on a skipped test that is not a named helper (default: CI=true)")
	helpers := fs.String("helpers", "", "comma-separated names of helper tests whose skips are expected")
	quiet := fs.Bool("quiet", false, "print only the summary, not the go test lines")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s := &Summary{}
	if !*quiet {
		s.Echo = stdout
	}
	if fs.NArg() == 0 {
		if err := s.Read(stdin); err != nil {
			fmt.Fprintln(stderr, "testsummary:", err)
			return 1
		}
	}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "testsummary:", err)
			return 1
		}
		err = s.Read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "testsummary: %s: %v\n", name, err)
			return 1
		}
	}
	var refused []Skip
	if *ci {
		var names []string
		if *helpers != "" {
			names = strings.Split(*helpers, ",")
		}
		refused = Unexpected(s.Skips(), names)
	}
	fmt.Fprintln(stdout)
	if err := s.WriteTable(stdout, refused); err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 1
	}
	if _, failed, _ := s.Totals(); failed > 0 || len(refused) > 0 {
		return 1
	}
	return 0
}
