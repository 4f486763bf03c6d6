package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmed-slurm/operators/libs/service"
	"github.com/charmed-slurm/operators/libs/service/pebble"
	"github.com/charmed-slurm/operators/tests/hosts"
	"github.com/charmed-slurm/operators/tests/hosts/hoststest"
)

// confPath is slurm.conf on the controller host (its private /etc/slurm).
const confPath = "/etc/slurm/slurm.conf"

// pollInterval is how often the tests look at the cluster again while
// waiting for a state; the waits are bounded by contexts, never by sleeps.
const pollInterval = 100 * time.Millisecond

// cluster is a network with a controller host "ctl" running munged and
// slurmctld under Pebble.
type cluster struct {
	t   testing.TB
	net *hosts.Network
	ctl *hosts.Host
	key []byte
}

// baseConf returns testdata/slurm.conf.base for a controller at ctl.
func baseConf(t testing.TB, ctl *hosts.Host) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/slurm.conf.base")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(data, []byte("@CTL_ADDR@"), []byte(ctl.Addr.String()))
}

// newCluster creates the network and the controller host with munged
// running, writes conf(ctl) as its slurm.conf and starts slurmctld.
func newCluster(t testing.TB, conf func(ctl *hosts.Host) []byte) *cluster {
	t.Helper()
	n := hoststest.New(t)
	ctl := hoststest.AddHost(t, n, "ctl")
	c := &cluster{t: t, net: n, ctl: ctl, key: make([]byte, 64)}
	rand.Read(c.key)
	t.Cleanup(c.dumpLogsOnFailure)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hosts.StartMunge(ctx, ctl, c.key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ctl.Path(confPath), conf(ctl), 0o644); err != nil {
		t.Fatal(err)
	}
	c.startSlurmctld(ctx)
	return c
}

// startSlurmctld starts slurmctld on ctl through its Pebble (with
// service/pebble) and waits until `scontrol ping` reports it UP.
func (c *cluster) startSlurmctld(ctx context.Context) {
	c.t.Helper()
	m, err := pebble.New(c.ctl.PebbleSocket())
	if err != nil {
		c.t.Fatal(err)
	}
	spec := service.Spec{Name: "slurmctld", Command: []string{"slurmctld", "-D", "-f", confPath}}
	if err := m.Configure(ctx, spec); err != nil {
		c.t.Fatal(err)
	}
	if err := m.Start(ctx, "slurmctld"); err != nil {
		c.t.Fatalf("%v\n%s", err, c.ctlLog())
	}
	waitUntil(c.t, ctx, "slurmctld UP", func() (bool, string) {
		out, err := c.scontrol(ctx, "ping")
		return err == nil && strings.Contains(out, "is UP"), out
	})
}

// scontrol runs scontrol on the controller host.
func (c *cluster) scontrol(ctx context.Context, args ...string) (string, error) {
	return c.onCtl(ctx, append([]string{"scontrol"}, args...)...)
}

// onCtl runs a Slurm client command on the controller host.
func (c *cluster) onCtl(ctx context.Context, argv ...string) (string, error) {
	out, err := c.ctl.RunEnv(ctx, []string{"SLURM_CONF=" + confPath}, argv...)
	return strings.TrimSpace(string(out)), err
}

// addCompute adds a host sharing the cluster's munge key.
func (c *cluster) addCompute(name string) *hosts.Host {
	c.t.Helper()
	h := hoststest.AddHost(c.t, c.net, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hosts.StartMunge(ctx, h, c.key); err != nil {
		c.t.Fatal(err)
	}
	return h
}

func (c *cluster) ctlLog() string {
	data, _ := os.ReadFile(c.ctl.Path("/var/log/slurm/slurmctld.log"))
	return tail(string(data), 40)
}

func (c *cluster) dumpLogsOnFailure() {
	if !c.t.Failed() {
		return
	}
	c.t.Log(hoststest.DumpMarker + "slurmctld's and slurmd's logs")
	c.t.Logf("slurmctld.log (tail):\n%s", c.ctlLog())
	for _, h := range c.net.Hosts() {
		if data, err := os.ReadFile(h.Path("/var/log/slurm/slurmd.log")); err == nil {
			c.t.Logf("slurmd.log on %s (tail):\n%s", h.Name, tail(string(data), 30))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitUntil polls cond every pollInterval until it holds, failing the test
// when ctx ends first; the last detail cond gave is reported.
func waitUntil(t testing.TB, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	if err := poll(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func poll(ctx context.Context, cond func() (bool, string)) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, detail := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %s)", ctx.Err(), detail)
		case <-tick.C:
		}
	}
}
