package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/hostlist"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// showCurrentConfig returns slurm.conf and its includes as results.
func (h *hook) showCurrentConfig(ctx context.Context) error {
	c, hc := h.c, h.hc
	data, err := os.ReadFile(c.Path(confPath))
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", confPath, err)
	}
	res := map[string]string{"slurm-conf": string(data)}
	doc, err := slurmconf.Parse(data)
	if err != nil {
		return fmt.Errorf("cannot parse %s: %w", confPath, err)
	}
	for _, inc := range doc.Includes() {
		p := inc
		if !filepath.IsAbs(p) {
			p = filepath.Join(confDir, p)
		}
		b, err := os.ReadFile(c.Path(p))
		if err != nil {
			return fmt.Errorf("cannot read include %s: %w", p, err)
		}
		res["includes."+resultKey(strings.TrimSuffix(filepath.Base(inc), ".conf"))] = string(b)
	}
	return hc.Actions.Set(ctx, res)
}

var badKeyChars = regexp.MustCompile(`[^a-z0-9-]+`)

// resultKey turns a name into a valid action result key.
func resultKey(s string) string {
	k := strings.Trim(badKeyChars.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if k == "" {
		return "x"
	}
	return k
}

// rotateAuthKey publishes a new auth key revision (leader only), installs it here and
// restarts munged; slurmd units follow on secret-changed.
func (h *hook) rotateAuthKey(ctx context.Context) error {
	c := h.c
	hc := h.hc
	if !h.leader {
		return hc.Actions.Fail(ctx, "rotate-auth-key must run on the leader unit")
	}
	id, content, err := authKey{h}.read(ctx)
	if err != nil {
		return hc.Actions.Fail(ctx, fmt.Sprintf("no auth key secret yet: %v", err))
	}
	_, oldID, err := slurmd.DecodeAuthSecret(content)
	if err != nil {
		return fmt.Errorf("cannot read auth key secret %s: %w", id, err)
	}
	n, err := strconv.Atoi(oldID)
	if err != nil {
		n = 0
	}
	keyID := strconv.Itoa(n + 1)
	key, err := newKey(c.Rand)
	if err != nil {
		return err
	}
	feat, err := h.features(ctx)
	if err != nil {
		return err
	}
	if err := hc.Secrets.Set(ctx, id, slurmd.EncodeAuthSecret(key, keyID), juju.SecretSetOptions{}); err != nil {
		return fmt.Errorf("cannot publish the new auth key: %w", err)
	}
	h.st.SecretID = string(id)
	if err := (authKey{h}).install(ctx, feat, key, keyID); err != nil {
		return err
	}
	h.logf(ctx, juju.LevelInfo, "rotated the auth key to key id %s", keyID)
	return hc.Actions.Set(ctx, map[string]string{"keyid": keyID, "secret-id": string(id)})
}

// settleJobs settles the pending jobs of a partition being removed (they can never run
// there): move-to queues them in another live partition, cancel=true cancels them. Running
// jobs are never touched: the partition is removed once they end. The results name the jobs
// moved or cancelled.
func (h *hook) settleJobs(ctx context.Context) error {
	hc := h.hc
	var p struct {
		Partition string `json:"partition"`
		MoveTo    string `json:"move-to"`
		Cancel    bool   `json:"cancel"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	if !h.leader {
		return hc.Actions.Fail(ctx, "settle-jobs must run on the leader unit")
	}
	if _, ok := h.st.Removing[p.Partition]; !ok {
		return hc.Actions.Fail(ctx, fmt.Sprintf("partition: %q is not being removed (partitions being removed: %s)", p.Partition, strings.Join(sortedKeys(h.st.Removing), ",")))
	}
	if (p.MoveTo == "") == !p.Cancel {
		return hc.Actions.Fail(ctx, "give exactly one of move-to=<partition> and cancel=true")
	}
	if p.MoveTo != "" {
		if _, rm := h.st.Removing[p.MoveTo]; rm || !slices.Contains(h.st.Apps, p.MoveTo) {
			return hc.Actions.Fail(ctx, fmt.Sprintf("move-to: %q is not a partition of a related slurmd application", p.MoveTo))
		}
	}
	jobs, err := partitionJobs(ctx, h.client(), p.Partition)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	cl := h.client()
	var done, failed []string
	for _, j := range jobs {
		if j.State != "PENDING" {
			continue
		}
		if p.Cancel {
			err = cl.CancelJobs(ctx, j.ID)
		} else {
			err = cl.MovePendingJob(ctx, j.ID, p.MoveTo)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("job %s: %v", j.ID, err))
			continue
		}
		done = append(done, j.ID)
	}
	key := "moved"
	if p.Cancel {
		key = "cancelled"
	}
	h.logf(ctx, juju.LevelInfo, "settle-jobs: %s pending jobs %s of partition %s", key, strings.Join(done, ","), p.Partition)
	if err := (partitionRemovals{h}).pass(ctx); err != nil {
		return err
	}
	res := map[string]string{key: strings.Join(done, ","), "partition": p.Partition}
	if err := errors.Join(hc.Actions.Set(ctx, res), h.report(ctx)); err != nil {
		return err
	}
	if len(failed) > 0 {
		return hc.Actions.Fail(ctx, strings.Join(failed, "; "))
	}
	return nil
}

// reboot runs the reboot action: nodes (a hostlist, required) are rebooted through
// Slurm, each when its jobs have ended, never more than max-unavailable of them at once
// (default: defaultUnavailablePercent of them, at least one); the results name the nodes asked now and those queued.
func (h *hook) reboot(ctx context.Context) error {
	hc := h.hc
	var p struct {
		Nodes          string `json:"nodes"`
		Reason         string `json:"reason"`
		MaxUnavailable *int   `json:"max-unavailable"`
	}
	if err := hc.Actions.Params(ctx, &p); err != nil {
		return err
	}
	if !h.leader {
		return hc.Actions.Fail(ctx, "reboot must run on the leader unit")
	}
	nodes, err := expandNodes(p.Nodes)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	if len(nodes) > maxRebootNodes {
		return hc.Actions.Fail(ctx, fmt.Sprintf("nodes: %d nodes, at most %d in one rolling reboot", len(nodes), maxRebootNodes))
	}
	if p.MaxUnavailable != nil && *p.MaxUnavailable < 1 {
		return hc.Actions.Fail(ctx, fmt.Sprintf("max-unavailable: %d: must be at least 1 (unset: %d%% of the nodes, at least one)", *p.MaxUnavailable, defaultUnavailablePercent))
	}
	reason := strings.TrimSpace(p.Reason)
	if reason == "" {
		reason = defaultRebootReason
	}
	if strings.ContainsAny(reason, "\n\r\"") {
		return hc.Actions.Fail(ctx, "reason: must not contain a newline or double quote")
	}
	if r := h.st.Reboots; r != nil {
		return hc.Actions.Fail(ctx, fmt.Sprintf("a rolling reboot is under way (%d nodes left): wait for it to end", len(r.Queued)+len(r.Asked)))
	}
	cl := h.client()
	var o nodeOutcome
	var known []string
	for _, n := range nodes {
		if _, err := cl.ShowNode(ctx, n); err != nil {
			o.fail(n, nodeError(n, err))
			continue
		}
		known = append(known, n)
	}
	if len(o.failed) > 0 {
		return o.report(ctx, hc, map[string]string{"nodes": ""})
	}
	max := defaultMaxUnavailable(len(known))
	if p.MaxUnavailable != nil {
		max = min(*p.MaxUnavailable, len(known))
	}
	h.st.Reboots = &rebootPlan{Reason: reason, Max: max, Queued: known, Asked: map[string]string{}, Since: h.c.Now().UTC().Truncate(time.Second)}
	asked, err := rollingReboot{h}.advance(ctx)
	if err != nil {
		return hc.Actions.Fail(ctx, err.Error())
	}
	res := map[string]string{"nodes": hostlist.Compress(asked), "max-unavailable": fmt.Sprint(max)}
	if r := h.st.Reboots; r != nil && len(r.Queued) > 0 {
		res["queued"] = hostlist.Compress(r.Queued)
	}
	if err := hc.Actions.Set(ctx, res); err != nil {
		return err
	}
	// The status shows the rolling reboot now: no hook may come before the next update-status.
	return h.report(ctx)
}

// takeover is the takeover action: this unit's controller takes control, and keeps it.
//
// On a backup: `scontrol takeover <its index>`; the units listed before it give up control
// and stand down (their record in this unit's peer bag, controlRecord). On a unit that
// stands down: its slurmctld starts again (bounded by
// startWait) and the record it stood down for is taken back from; a primary starting takes
// control back by itself, a backup asks for it as above. The result names the controller in
// control afterwards, read from the heartbeat (bounded by takeoverWait).
func (h *hook) takeover(ctx context.Context) error {
	hc := h.hc
	me := hc.Event.Unit
	rel, err := h.peerRelation(ctx)
	if err != nil {
		return err
	}
	if len(h.ctls) == 0 {
		h.ctls = h.st.Controllers
	}
	if rel != "" && len(h.ctls) == 0 {
		app, err := hc.Relations.AppData(ctx, rel, hc.Event.App)
		if err != nil {
			return err
		}
		if h.ctls, err = decodeControllers(app[peerKeyControllers]); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(h.ctls, func(c controller) bool { return c.Unit == me })
	if i < 0 || len(live(h.ctls)) < 2 || rel == "" {
		return hc.Actions.Fail(ctx, "this unit is not one of several controllers (the controllers: "+fmt.Sprint(hostsOf(h.ctls))+")")
	}
	s := standby{h}
	if err := s.refresh(ctx); err != nil {
		return err
	}
	res := map[string]string{}
	started := false
	switch sd := h.st.StoodDown; {
	case sd != nil:
		h.st.TookBack = append(h.st.TookBack, sd.Record)
		h.st.StoodDown = nil
		h.logf(ctx, juju.LevelInfo, "takeover: taking control back from %s (%s)", sd.By, sd.Record)
		if !h.c.running(ctx) {
			// No wait for slurmctld to answer: started while another controller is in
			// control, it answers nothing until that one gave control back (below).
			if err := (slurmctldDaemon{h}).launch(ctx); err != nil {
				_ = h.report(ctx)
				return hc.Actions.Fail(ctx, fmt.Sprintf("cannot start slurmctld: %v", err))
			}
			h.st.RunningHosts = hostsOf(h.ctls)
			started = true
			res["started"] = "slurmctld"
		}
	case !h.c.running(ctx):
		return hc.Actions.Fail(ctx, "slurmctld is not running on this unit (see its status)")
	}
	if act, ok := h.activeController(); ok && act.Unit == me && !started {
		res["in-control"] = me
		res["result"] = "this unit is the active controller already"
		return errors.Join(hc.Actions.Set(ctx, res), h.report(ctx))
	}
	if i == 0 && !started {
		return hc.Actions.Fail(ctx, "this unit is the primary controller and its slurmctld runs: it takes control whenever it starts; run takeover on a backup to hand control to it")
	}
	if i > 0 {
		if err := h.client().Takeover(ctx, i); err != nil {
			_ = h.report(ctx)
			return hc.Actions.Fail(ctx, fmt.Sprintf("scontrol takeover %d: %v", i, err))
		}
		var from []string
		for _, c := range h.ctls[:i] {
			if !c.Gone {
				from = append(from, c.Unit)
			}
		}
		rec, err := json.Marshal(controlRecord{ID: me + "@" + h.c.Now().UTC().Format(time.RFC3339Nano), From: from})
		if err != nil {
			return err
		}
		if err := hc.Relations.SetUnitData(ctx, rel, map[string]string{peerKeyTookControl: string(rec)}); err != nil {
			return fmt.Errorf("cannot record the takeover for the peers: %w", err)
		}
		res["stood-down"] = strings.Join(from, ",")
	}
	wait := takeoverWait
	if started {
		wait = reclaimWait
	}
	wait = cmp.Or(h.c.ControlWait, wait)
	act, ok := s.waitInControl(ctx, wait)
	switch {
	case ok && act.Unit == me && i > 0:
		res["in-control"] = me
		res["result"] = fmt.Sprintf("%s (backup %d) is in control; standing down, slurmctld stopped until takeover is run there: %s", me, i, res["stood-down"])
	case ok && act.Unit == me:
		res["in-control"] = me
		res["result"] = me + " (primary) is in control again; the backups stand by"
	case ok:
		res["in-control"] = act.Unit
		res["result"] = fmt.Sprintf("takeover requested, but the heartbeat names %s in control after %s", act.Unit, wait)
	default:
		res["in-control"] = "unknown"
		res["result"] = fmt.Sprintf("takeover requested; no fresh heartbeat names the controller in control after %s", wait)
	}
	return errors.Join(hc.Actions.Set(ctx, res), h.report(ctx))
}
