// Command ctlevents reads slurmctld.log on its standard input and prints what slurmctld says it
// did, as "<reconfigures> <starts>" (slurm.ParseControllerLog: from Slurm 23.11 a reconfigure
// starts a new process, which is not a restart). scripts/demo.sh counts with it.
//
//	juju-local exec slurmctld/0 -- cat /var/log/slurm/slurmctld.log | ctlevents
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/charmed-slurm/operators/libs/slurm"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: ctlevents < slurmctld.log")
		return 2
	}
	log, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "ctlevents: cannot read slurmctld.log: %v\n", err)
		return 1
	}
	ev := slurm.ParseControllerLog(log)
	fmt.Fprintf(stdout, "%d %d\n", ev.Reconfigures, ev.Starts)
	return 0
}
