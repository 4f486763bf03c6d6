package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/charmed-slurm/operators/interfaces/slurmd"
	"github.com/charmed-slurm/operators/libs/juju"
	"github.com/charmed-slurm/operators/libs/slurm"
	"github.com/charmed-slurm/operators/libs/slurmconf"
)

// confHeader starts a slurm.conf the charm creates. Comments an admin adds later survive
// every edit (the file is edited losslessly, not regenerated).
const confHeader = `# slurm.conf of the Slurm cluster, managed by the slurmctld charm.
# Keys the charm manages are rewritten on every configuration change; set extra global keys
# with the charm's slurm-conf-parameters option. Each related slurmd application has its
# NodeSet and PartitionName in its own include file, partition-<application>.conf.
# Compute nodes are dynamic nodes (slurmd -Z): there are no NodeName lines.
`

// defaultKeys are written when absent (and restored when slurm-conf-parameters stops
// overriding them); slurm-conf-parameters may change them.
var defaultKeys = slurmconf.Params{
	{Key: "SchedulerType", Value: "sched/backfill"},
	{Key: "SchedulerParameters", Value: "batch_sched_delay=0,sched_min_interval=0"},
	{Key: "SelectTypeParameters", Value: "CR_Core"},
	{Key: "JobAcctGatherType", Value: "jobacct_gather/none"},
	{Key: "AccountingStorageType", Value: "accounting_storage/none"},
	{Key: "JobCompType", Value: "jobcomp/none"},
	{Key: "SlurmctldDebug", Value: "info"},
	{Key: "SlurmdDebug", Value: "info"},
	{Key: "SlurmdTimeout", Value: "300"},
	{Key: "InactiveLimit", Value: "0"},
	{Key: "KillWait", Value: "30"},
	{Key: "MinJobAge", Value: "300"},
	{Key: "MailProg", Value: "/bin/true"},
	// scontrol reboot: the slurmd charm's program, and time for a real machine to boot.
	{Key: "RebootProgram", Value: RebootProgram},
	{Key: "ResumeTimeout", Value: ResumeTimeout},
}

// slurmConf writes slurm.conf and the partition files (in the candidate while an edit runs,
// confFiles.change) from the configuration and the state.
type slurmConf struct{ h *hook }

// managedValues are the values of the managed global keys, in file order.
func (sc slurmConf) managedValues(feat slurm.Features, host, addr string) slurmconf.Params {
	h := sc.h
	return slurmconf.Params{
		{Key: "ClusterName", Value: h.cfg.ClusterName},
		{Key: "SlurmctldPort", Value: strconv.Itoa(SlurmctldPort)},
		{Key: "SlurmdPort", Value: strconv.Itoa(SlurmdPort)},
		{Key: "SlurmUser", Value: slurmUser},
		{Key: "SlurmdUser", Value: "root"},
		{Key: "AuthType", Value: feat.AuthType},
		{Key: "CredType", Value: feat.CredType},
		{Key: "StateSaveLocation", Value: h.st.stateSaveLocation()},
		{Key: "SlurmdSpoolDir", Value: "/var/spool/slurmd"},
		{Key: "SlurmctldPidFile", Value: "/run/slurmctld.pid"},
		{Key: "SlurmdPidFile", Value: "/run/slurmd.pid"},
		{Key: "SlurmctldLogFile", Value: slurmctldLog},
		{Key: "SlurmdLogFile", Value: "/var/log/slurm/slurmd.log"},
		{Key: "SelectType", Value: "select/cons_tres"},
		{Key: "ProctrackType", Value: "proctrack/linuxproc"},
		{Key: "TaskPlugin", Value: "task/none"},
		{Key: "MpiDefault", Value: "none"},
		{Key: "ReturnToService", Value: "2"},
		{Key: "MaxNodeCount", Value: strconv.Itoa(sc.maxNodeCount())},
		{Key: "TreeWidth", Value: "65533"},
		{Key: "SlurmctldParameters", Value: "enable_configless"},
		// gpu from the first start, so that GPU nodes never need a restart (docs/gres.md).
		{Key: "GresTypes", Value: h.st.gresTypes()},
	}
}

// write edits slurm.conf in place: managed keys set, defaults added when absent,
// slurm-conf-parameters applied (and keys it no longer sets removed or reset). It reports
// whether the file changed.
func (sc slurmConf) write(ctx context.Context, feat slurm.Features) (bool, error) {
	h := sc.h
	c := h.c
	host, err := c.Hostname()
	if err != nil {
		return false, fmt.Errorf("cannot find the host name: %w", err)
	}
	addr, err := h.ingress(ctx)
	if err != nil {
		return false, err
	}
	path := h.conf.path("slurm.conf")
	created := false
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, fmt.Errorf("cannot create %s: %w", confDir, err)
		}
		if err := slurmconf.WriteFile(ctx, path, []byte(confHeader), slurmconf.EditOptions{Mode: 0o644}); err != nil {
			return false, fmt.Errorf("cannot write %s: %w", confPath, err)
		}
		created = true
	}
	managed := sc.managedValues(feat, host, addr)
	defaults := append(slices.Clone(defaultKeys), metricsDefaults(feat)...)
	prevExtra := h.st.ExtraKeys
	hosts := []string{host + "(" + addr + ")"}
	if h.ctls == nil {
		// A hook that did not plan the controllers (a relation's: accounting turned on or
		// off) keeps the last plan's, not this host alone.
		h.ctls = h.st.Controllers
	}
	if len(h.ctls) > 0 {
		hosts = hostsOf(h.ctls)
	}
	changed, err := slurmconf.Edit(ctx, path, func(d *slurmconf.Doc) error {
		if !slices.Equal(d.GetAll("SlurmctldHost"), hosts) {
			d.Delete("SlurmctldHost")
			for _, v := range hosts {
				if err := d.Add("SlurmctldHost", v); err != nil {
					return err
				}
			}
		}
		for _, p := range managed {
			if err := d.Set(p.Key, p.Value); err != nil {
				return err
			}
		}
		for _, p := range defaults {
			_, present := d.Get(p.Key)
			if !present || (hasFold(prevExtra, p.Key) && !h.extra.Has(p.Key)) {
				if err := d.Set(p.Key, p.Value); err != nil {
					return err
				}
			}
		}
		for _, k := range prevExtra {
			if !h.extra.Has(k) && !defaults.Has(k) {
				d.Delete(k)
			}
		}
		for _, p := range h.extra {
			if err := d.Set(p.Key, p.Value); err != nil {
				return fmt.Errorf("slurm-conf-parameters: %w", err)
			}
		}
		if err := sc.editAccounting(d); err != nil {
			return err
		}
		metricsGate{h}.edit(d)
		return nil
	}, slurmconf.EditOptions{})
	if err != nil {
		return false, fmt.Errorf("cannot write %s: %w", confPath, err)
	}
	h.st.ExtraKeys = h.extra.Keys()
	return changed || created, nil
}

// rewrite writes slurm.conf for the state (on a candidate Slurm's parser reads first) and has
// a running slurmctld apply it (slurmctldDaemon.apply: one restart or one reconfigure). A
// candidate Slurm refuses changes nothing: it is logged and returned as refused, not as an
// error.
func (sc slurmConf) rewrite(ctx context.Context) (refused *slurm.ConfigError, err error) {
	h := sc.h
	feat, err := h.features(ctx)
	if err != nil {
		return nil, err
	}
	changed, err := h.conf.change(ctx, func(ctx context.Context) (bool, error) { return sc.write(ctx, feat) })
	if errors.As(err, &refused) {
		h.logf(ctx, juju.LevelWarning, "slurm.conf left as it was: %v", err)
		return refused, nil
	}
	if err != nil || !(slurmctldDaemon{h}).live(ctx) {
		return nil, err
	}
	return nil, slurmctldDaemon{h}.apply(ctx, changed)
}

// accountingTRES is what AccountingStorageTRES adds to Slurm's default TRES (cpu, mem, node,
// energy, billing, fs/disk, vmem, pages): GPUs, so that sacct shows gres/gpu.
const accountingTRES = "gres/gpu"

// editAccounting sets slurm.conf's accounting keys for the accounting state (write runs it
// after slurm-conf-parameters): the slurmdbd keys when accounting is on, none when it is off;
// AccountingStorageTRES unless slurm-conf-parameters sets it.
func (sc slurmConf) editAccounting(d *slurmconf.Doc) error {
	h := sc.h
	a := h.st.Accounting
	on := a.storage() != ""
	typ := "accounting_storage/none"
	if on {
		typ = "accounting_storage/slurmdbd"
	}
	if err := d.Set("AccountingStorageType", typ); err != nil {
		return err
	}
	if !on {
		d.Delete("AccountingStorageHost")
		d.Delete("AccountingStoragePort")
	} else {
		if err := d.Set("AccountingStorageHost", a.Host); err != nil {
			return err
		}
		if err := d.Set("AccountingStoragePort", strconv.Itoa(a.Port)); err != nil {
			return err
		}
	}
	if !h.extra.Has("AccountingStorageTRES") {
		d.Delete("AccountingStorageTRES")
		if on {
			return d.Set("AccountingStorageTRES", accountingTRES)
		}
	}
	return nil
}

func hasFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// placeholderPartition is in slurm.conf while no slurmd application has a partition.
var placeholderPartition = slurmconf.Partition{Name: "unconfigured", Params: slurmconf.Params{
	{Key: "State", Value: "INACTIVE"}, {Key: "Hidden", Value: "YES"},
}}

// partitionInclude is the include line's (relative) path for app's partition file.
func partitionInclude(app string) string { return "partition-" + app + ".conf" }

// includeApp is the application whose partition include inc is (partitionInclude's inverse).
func includeApp(inc string) (string, bool) {
	app, ok := strings.CutPrefix(inc, "partition-")
	app, ok2 := strings.CutSuffix(app, ".conf")
	return app, ok && ok2 && app != "" && !strings.ContainsAny(app, "/\\")
}

// defaultApp is the application whose partition is the default one: default-partition when it
// names a related application, else the first one that is not being removed.
func (sc slurmConf) defaultApp() string {
	h := sc.h
	live := slices.DeleteFunc(slices.Clone(h.st.Apps), func(a string) bool { _, rm := h.st.Removing[a]; return rm })
	if h.cfgErr == nil && slices.Contains(live, h.cfg.DefaultPartition) {
		return h.cfg.DefaultPartition
	}
	if len(live) > 0 {
		return live[0]
	}
	return ""
}

// renderPartition is the content of app's partition file: future (a FUTURE NodeName line, see
// futureRecord; "" for none), the NodeSet and the partition.
func renderPartition(data slurmd.ComputeData, future string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Partition of the slurmd application %q, managed by the slurmctld charm.\n", data.NodeSet.Name)
	if future != "" {
		b.WriteString("# FUTURE records (never up, never scheduled) so that Slurm accepts and holds jobs while\n")
		b.WriteString("# the application has no unit; see the future-nodes option.\n")
		b.WriteString(future + "\n")
	}
	b.WriteString(data.NodeSet.String() + "\n")
	b.WriteString(data.Partition.String() + "\n")
	return b.Bytes()
}

// readPartition reads app's partition file back.
func (sc slurmConf) readPartition(ctx context.Context, app string) (slurmd.ComputeData, error) {
	h := sc.h
	doc, err := slurmconf.ReadFile(ctx, h.conf.path(partitionInclude(app)))
	if err != nil {
		return slurmd.ComputeData{}, err
	}
	ns, ok1 := doc.NodeSet(app)
	p, ok2 := doc.Partition(app)
	if !ok1 || !ok2 {
		return slurmd.ComputeData{}, fmt.Errorf("%s has no NodeSet or PartitionName %s", partitionInclude(app), app)
	}
	return slurmd.ComputeData{NodeSet: ns, Partition: p}, nil
}

// syncPartitions writes the partition file of every application in the state (with the data
// in override, else the file's own), sets Default=YES on the default partition only and
// State=INACTIVE on partitions being removed, and adds the include lines to slurm.conf. It
// reports whether any file changed: the caller then reconfigures once.
func (sc slurmConf) syncPartitions(ctx context.Context, override map[string]slurmd.ComputeData) (bool, error) {
	h := sc.h
	def := sc.defaultApp()
	ver, future := sc.futureConfig()
	changed := false
	var includes []string
	for _, app := range h.st.Apps {
		data, ok := override[app]
		if !ok {
			var err error
			if data, err = sc.readPartition(ctx, app); err != nil {
				h.logf(ctx, juju.LevelWarning, "cannot read the partition of %s: %v", app, err)
				continue
			}
		}
		data.Partition.Params = data.Partition.Params.Clone()
		if app == def {
			data.Partition.Params.Set("Default", "YES")
		} else {
			data.Partition.Params.Delete("Default")
		}
		if _, rm := h.st.Removing[app]; rm {
			data.Partition.Params.Set("State", slurm.PartitionInactive)
		}
		content := renderPartition(data, futureRecord(ver, future, data.NodeSet))
		path := h.conf.path(partitionInclude(app))
		if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, content) {
			if err := slurmconf.WriteFile(ctx, path, content, slurmconf.EditOptions{Mode: 0o644}); err != nil {
				return changed, fmt.Errorf("cannot write %s: %w", partitionInclude(app), err)
			}
			changed = true
		}
		includes = append(includes, partitionInclude(app))
	}
	incChanged, err := slurmconf.Edit(ctx, h.conf.path("slurm.conf"), func(d *slurmconf.Doc) error {
		// slurmctld refuses to start without a partition: until a slurmd application
		// brings one, a hidden, inactive placeholder without nodes stands in.
		if len(includes) == 0 {
			return d.SetPartition(placeholderPartition)
		}
		d.DeletePartition(placeholderPartition.Name)
		// The FUTURE records of the applications now in the state are node records too.
		if err := d.Set("MaxNodeCount", strconv.Itoa(sc.maxNodeCount())); err != nil {
			return err
		}
		have := d.Includes()
		for _, inc := range includes {
			if !slices.Contains(have, inc) {
				if err := d.AddInclude(inc); err != nil {
					return err
				}
			}
		}
		return nil
	}, slurmconf.EditOptions{})
	if err != nil {
		return changed, fmt.Errorf("cannot add partition includes to %s: %w", confPath, err)
	}
	return changed || incChanged, nil
}

// removePartition deletes app's include line and partition file.
func (sc slurmConf) removePartition(ctx context.Context, app string) error {
	h := sc.h
	_, err := slurmconf.Edit(ctx, h.conf.path("slurm.conf"), func(d *slurmconf.Doc) error {
		d.DeleteInclude(partitionInclude(app))
		return nil
	}, slurmconf.EditOptions{})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the include of %s from %s: %w", app, confPath, err)
	}
	if err := os.Remove(h.conf.path(partitionInclude(app))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", partitionInclude(app), err)
	}
	return nil
}

// setGresTypes sets GresTypes in (the candidate) slurm.conf and reports whether it changed.
func (sc slurmConf) setGresTypes(ctx context.Context) (bool, error) {
	h := sc.h
	changed, err := slurmconf.Edit(ctx, h.conf.path("slurm.conf"), func(d *slurmconf.Doc) error {
		return d.Set("GresTypes", h.st.gresTypes())
	}, slurmconf.EditOptions{})
	if err != nil {
		return false, fmt.Errorf("cannot set GresTypes in %s: %w", confPath, err)
	}
	return changed, nil
}

// futureConfig is the Slurm version (unknown: treated as 22.05, no records) and the
// future-nodes option (none while the configuration is bad: Validate names the option).
func (sc slurmConf) futureConfig() (slurm.Version, futureNodes) {
	h := sc.h
	ver, _ := slurm.ParseVersion(h.st.SlurmVersion)
	future, err := parseFutureNodes(h.cfg.FutureNodes)
	if err != nil || h.cfgErr != nil {
		return ver, futureNodes{}
	}
	return ver, future
}

// maxNodeCount is slurm.conf's MaxNodeCount: max-node-count dynamic nodes plus the FUTURE
// records of every application in the state. Slurm counts configured records in MaxNodeCount
// and a slurmctld whose slurm.conf has more records than MaxNodeCount exits at (re)start
// ("Unable to add node, node table is full", seen on 24.11.5 with MaxNodeCount=2 and 8
// records), which Slurm's parser (the candidate check) does not catch. Counting an application
// whose partition file could not be written only makes the bound a little higher.
func (sc slurmConf) maxNodeCount() int {
	h := sc.h
	ver, future := sc.futureConfig()
	n := h.cfg.MaxNodeCount
	if slurm.FeaturesOf(ver).FutureNodes {
		n += future.Nodes * len(h.st.Apps)
	}
	return n
}
