package slurmconf

import "strings"

// globalSpec lists the global slurm.conf keys of Slurm 22.05, from its slurm.conf(5)
// manual (Debian's slurm-client 22.05.8), checked against the installed Slurm's parser by
// TestGlobalKeysAgainstSlurm. The keys that start entries (NodeName, NodeSet,
// PartitionName, DownNodes, FrontendName) and Include are not global keys, nor are the
// manual's words that 22.05's parser does not take as global keys (TRESBillingWeights and
// MaxCPUsPerNode are partition keys; BurstBuffer, KeepPartInfo, KeepPartState, NodeFeatures,
// SlurmdOffSpec, TraceJobs and UsePss are option values).
var globalSpec = newSpec("global", "", globalKeys2205, nil)

var globalKeys2205 = []string{
	"AccountingStorageBackupHost", "AccountingStorageEnforce", "AccountingStorageExternalHost",
	"AccountingStorageHost", "AccountingStorageParameters", "AccountingStoragePass",
	"AccountingStoragePort", "AccountingStorageTRES", "AccountingStorageType",
	"AccountingStorageUser", "AccountingStoreFlags", "AcctGatherEnergyType",
	"AcctGatherFilesystemType", "AcctGatherInterconnectType", "AcctGatherNodeFreq",
	"AcctGatherProfileType", "AllowSpecResourcesUsage", "AuthAltParameters", "AuthAltTypes",
	"AuthInfo", "AuthType", "BackupAddr", "BackupController", "BatchStartTimeout", "BcastExclude",
	"BcastParameters", "BurstBufferType", "CliFilterPlugins", "ClusterName",
	"CommunicationParameters", "CompleteWait", "ControlAddr", "ControlMachine", "CoreSpecPlugin",
	"CpuFreqDef", "CpuFreqGovernors", "CredType", "DebugFlags", "DefCpuPerGPU", "DefMemPerCPU",
	"DefMemPerGPU", "DefMemPerNode", "DependencyParameters", "DisableRootJobs", "EioTimeout",
	"EnforcePartLimits", "Epilog", "EpilogMsgTime", "EpilogSlurmctld", "ExtSensorsFreq",
	"ExtSensorsType", "FairShareDampeningFactor", "FederationParameters", "FirstJobId",
	"GetEnvTimeout", "GpuFreqDef", "GresTypes", "GroupUpdateForce", "GroupUpdateTime", "HealthCheckInterval",
	"HealthCheckNodeState", "HealthCheckProgram", "InactiveLimit", "InteractiveStepOptions",
	"JobAcctGatherFrequency", "JobAcctGatherParams", "JobAcctGatherType", "JobCompHost", "JobCompLoc",
	"JobCompParams", "JobCompPass", "JobCompPort", "JobCompType", "JobCompUser", "JobContainerType",
	"JobFileAppend", "JobRequeue", "JobSubmitPlugins", "KillOnBadExit", "KillWait", "LaunchParameters", "LaunchType", "Licenses", "LogTimeFormat",
	"MCSParameters", "MCSPlugin", "MailDomain", "MailProg", "MaxArraySize", "MaxDBDMsgs", "MaxJobCount", "MaxJobId", "MaxMemPerCPU", "MaxMemPerNode", "MaxNodeCount",
	"MaxStepCount", "MaxTasksPerNode", "MessageTimeout", "MinJobAge", "MpiDefault", "MpiParams",
	"NodeFeaturesPlugins", "OverTimeLimit", "PlugStackConfig", "PluginDir",
	"PowerParameters", "PowerPlugin", "PrEpParameters", "PrEpPlugins", "PreemptExemptTime",
	"PreemptMode", "PreemptType", "PriorityCalcPeriod", "PriorityDecayHalfLife", "PriorityFavorSmall",
	"PriorityFlags", "PriorityMaxAge", "PriorityParameters", "PrioritySiteFactorParameters",
	"PrioritySiteFactorPlugin", "PriorityType", "PriorityUsageResetPeriod", "PriorityWeightAge",
	"PriorityWeightAssoc", "PriorityWeightFairshare", "PriorityWeightJobSize",
	"PriorityWeightPartition", "PriorityWeightQOS", "PriorityWeightTRES", "PrivateData",
	"ProctrackType", "Prolog", "PrologEpilogTimeout", "PrologFlags", "PrologSlurmctld",
	"PropagatePrioProcess", "PropagateResourceLimits", "PropagateResourceLimitsExcept",
	"RebootProgram", "ReconfigFlags", "RequeueExit", "RequeueExitHold", "ResumeFailProgram",
	"ResumeProgram", "ResumeRate", "ResumeTimeout", "ResvEpilog", "ResvOverRun", "ResvProlog",
	"ReturnToService", "RoutePlugin", "SchedulerParameters", "SchedulerTimeSlice", "SchedulerType",
	"ScronParameters", "SelectType", "SelectTypeParameters", "SlurmSchedLogFile",
	"SlurmSchedLogLevel", "SlurmUser", "SlurmctldAddr", "SlurmctldDebug", "SlurmctldHost",
	"SlurmctldLogFile", "SlurmctldParameters", "SlurmctldPidFile", "SlurmctldPlugstack",
	"SlurmctldPort", "SlurmctldPrimaryOffProg", "SlurmctldPrimaryOnProg", "SlurmctldSyslogDebug",
	"SlurmctldTimeout", "SlurmdDebug", "SlurmdLogFile", "SlurmdParameters",
	"SlurmdPidFile", "SlurmdPort", "SlurmdSpoolDir", "SlurmdSyslogDebug", "SlurmdTimeout",
	"SlurmdUser", "SrunEpilog", "SrunPortRange", "SrunProlog", "StateSaveLocation", "SuspendExcNodes",
	"SuspendExcParts", "SuspendProgram", "SuspendRate", "SuspendTime", "SuspendTimeout",
	"SwitchParameters", "SwitchType", "TCPTimeout", "TaskEpilog", "TaskPlugin",
	"TaskPluginParam", "TaskProlog", "TmpFS", "TopologyParam", "TopologyPlugin",
	"TrackWCKey", "TreeWidth", "UnkillableStepProgram", "UnkillableStepTimeout", "UsePAM",
	"VSizeFactor", "WaitTime",
}

// GlobalKeys returns the global keys Slurm 22.05 accepts in slurm.conf (entry keys and
// Include excluded), sorted.
func GlobalKeys() []string { return globalSpec.list() }

// GlobalKey looks key up among the Slurm 22.05 global keys, ignoring case. It returns the
// key's canonical spelling and true when it is one; otherwise the closest known key, for a
// "did you mean" hint ("" when none is close), and false.
func GlobalKey(key string) (string, bool) { return globalSpec.lookup(key) }

// lookup returns key's canonical spelling and true when it is in the spec; otherwise the
// closest known key ("" when none is close) and false.
func (s *keySpec) lookup(key string) (string, bool) {
	lk := strings.ToLower(key)
	keys, _ := s.tables()
	if k, ok := keys[lk]; ok {
		return k, true
	}
	return s.suggest(lk), false
}
