// Command slurm-autoscaler grows and shrinks slurmd applications from Slurm's queue. An
// administrator runs it beside their Juju client (or as a service on that machine): it acts
// with the client's own credentials through `juju add-unit` and `juju remove-unit`, and reads
// Slurm on the slurmctld leader unit through `juju exec` (or on this host with --local-slurm).
//
//	slurm-autoscaler --app slurmd:min=1,max=6,idle=5m [--juju juju] [--model M] [--dry-run]
//
// Under the local model: --juju build/bin/juju-local with JUJU_LOCAL_DIR set. Every decision
// is printed as a status line ("slurmd: 11 pending jobs need 11 more nodes: adding 4").
// See docs/autoscaling.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmed-slurm/operators/autoscaler"
	"github.com/charmed-slurm/operators/autoscaler/jujucli"
	"github.com/charmed-slurm/operators/autoscaler/policy"
	"github.com/charmed-slurm/operators/libs/command"
	"github.com/charmed-slurm/operators/libs/slurm"
)

type appFlags []policy.App

func (a *appFlags) String() string { return fmt.Sprint(*a) }

func (a *appFlags) Set(spec string) error {
	app, err := policy.ParseApp(spec)
	if err != nil {
		return err
	}
	*a = append(*a, app)
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slurm-autoscaler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var apps appFlags
	fs.Var(&apps, "app", "slurmd application to scale, NAME[:min=N,max=N,idle=DUR,out=N,in=N,register-timeout=DUR] (repeatable)")
	jujuPath := fs.String("juju", "juju", "Juju client binary (juju, or build/bin/juju-local with JUJU_LOCAL_DIR set)")
	model := fs.String("model", "", "Juju model (-m), when not the client's current one")
	controller := fs.String("controller", "slurmctld", "slurmctld application: Slurm commands run on its leader unit through juju exec")
	localSlurm := fs.Bool("local-slurm", false, "run Slurm commands on this host instead (needs Slurm's clients and auth here)")
	conf := fs.String("slurm-conf", "/etc/slurm/slurm.conf", "slurm.conf path, passed as SLURM_CONF")
	interval := fs.Duration("interval", autoscaler.DefaultInterval, "time between decisions")
	dryRun := fs.Bool("dry-run", false, "only report the decisions")
	once := fs.Bool("once", false, "make one decision and exit")
	retry := fs.Duration("add-retry", autoscaler.DefaultRetryBase, "wait after a failed add-unit, doubling with each failure up to 5m")
	timeout := fs.Duration("command-timeout", 2*time.Minute, "bound on each juju command")
	tz := fs.String("controller-tz", "UTC", "the controller's time zone (scontrol prints LastBusyTime in it)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(apps) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: slurm-autoscaler --app NAME[:min=N,max=N,...] [flags]; see -h")
		return 2
	}
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		fmt.Fprintf(stderr, "invalid --controller-tz: %v\n", err)
		return 2
	}
	cli := &jujucli.CLI{Path: *jujuPath, Model: *model, Runner: command.Exec{Timeout: *timeout}}
	s := &autoscaler.Scaler{
		Juju:      cli,
		Apps:      apps,
		DryRun:    *dryRun,
		Interval:  *interval,
		RetryBase: *retry,
		Location:  loc,
		Report: func(line string) {
			fmt.Fprintf(stdout, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
		},
		Slurm: func(st *jujucli.Status) (autoscaler.Slurm, error) {
			if *localSlurm {
				return &slurm.Client{Runner: command.Exec{}, Conf: *conf}, nil
			}
			a, ok := st.Applications[*controller]
			if !ok {
				return nil, fmt.Errorf("no application %q in the model to run Slurm commands on (see --controller)", *controller)
			}
			unit := a.Leader()
			if unit == "" {
				return nil, errors.New("application " + *controller + " has no unit to run Slurm commands on")
			}
			return &slurm.Client{Runner: jujucli.UnitRunner{CLI: cli, Unit: unit}, Conf: *conf}, nil
		},
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = fmt.Sprintf("%s (min %d, max %d, idle %s, steps +%d/-%d)", a.Name, a.Min, a.Max, a.IdleTime, a.ScaleOutStep, a.ScaleInStep)
	}
	s.Report("scaling " + strings.Join(names, ", ") + dryRunNote(*dryRun))
	if *once {
		if err := s.Tick(ctx); err != nil {
			s.Report("error: " + err.Error())
			return 1
		}
		return 0
	}
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func dryRunNote(dry bool) string {
	if dry {
		return " (dry run: decisions only)"
	}
	return ""
}
