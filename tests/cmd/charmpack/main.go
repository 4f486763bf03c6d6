// Command charmpack packs a Go charm folder into a .charm file, or stages it as a
// self-contained charmcraft project (for `charmcraft pack` in managed mode).
//
//	charmpack -o build/slurmd.charm slurmd-operator
//	charmpack --stage build/charmcraft/slurmd-operator slurmd-operator
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/charmed-slurm/operators/tests/charmpack"
)

func main() {
	out := pflag.StringP("output", "o", "", "the .charm file to write (default build/<name>.charm)")
	stage := pflag.String("stage", "", "instead of packing, lay the charm out in this new directory as a charmcraft project holding the charm and the repository folders it needs (run from the repository root)")
	pflag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: charmpack [-o FILE | --stage DIR] CHARM-DIR\n\nBuilds the charm's dispatch binary (static) and packs it with the\nmetadata derived from CHARM-DIR/charmcraft.yaml: one archive (0644) per\nplatform, FILE itself for a charm with one platform, else FILE_<platform>.charm.\n\n")
		pflag.PrintDefaults()
	}
	pflag.Parse()
	if pflag.NArg() != 1 {
		pflag.Usage()
		os.Exit(2)
	}
	dir := pflag.Arg(0)
	if *stage != "" {
		keep, err := charmpack.CheckoutFiles(context.Background(), ".")
		if err == nil {
			err = charmpack.Stage(charmpack.StageOptions{Root: ".", Charm: filepath.Clean(dir), Dst: *stage, Keep: keep})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "charmpack:", err)
			os.Exit(1)
		}
		fmt.Println(*stage)
		return
	}
	c, err := charmpack.ReadCharmcraft(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "charmpack:", err)
		os.Exit(1)
	}
	if *out == "" {
		*out = "build/" + c.Name + ".charm"
	}
	if err := charmpack.Pack(context.Background(), charmpack.Options{Dir: dir, Out: *out}); err != nil {
		fmt.Fprintln(os.Stderr, "charmpack:", err)
		os.Exit(1)
	}
	for _, p := range c.PlatformNames() {
		fmt.Println(c.ArchivePath(*out, p))
	}
}
