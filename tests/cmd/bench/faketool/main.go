// Command faketool is the fake Juju hook tools and Slurm command stubs of the hook benchmark
// (package tests/bench/fake): install it as symlinks named after each tool.
package main

import (
	"os"

	"github.com/charmed-slurm/operators/tests/bench/fake"
)

func main() {
	os.Exit(fake.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
