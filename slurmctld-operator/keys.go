package main

import "strings"

// globalKeys are the global slurm.conf keys of Slurm 22.05, taken from its slurm.conf(5) manual
// (Debian's slurm-client 22.05.8), without the node, partition and option-value words.
// slurm-conf-parameters may only set these: an unknown key would stop slurmctld at the next
// reconfigure.
var globalKeys = strings.Fields(`
AccountingStorageBackupHost AccountingStorageEnforce AccountingStorageExternalHost 
AccountingStorageHost AccountingStorageParameters AccountingStoragePass AccountingStoragePort 
AccountingStorageTRES AccountingStorageType AccountingStorageUser AccountingStoreFlags 
AcctGatherEnergyType AcctGatherFilesystemType AcctGatherInterconnectType AcctGatherNodeFreq 
AcctGatherProfileType AllowSpecResourcesUsage AuthAltParameters AuthAltTypes AuthInfo AuthType 
BackupAddr BackupController BatchStartTimeout BcastExclude BcastParameters BurstBuffer 
BurstBufferType CliFilterPlugins ClusterName CommunicationParameters CompleteWait ControlAddr 
ControlMachine CoreSpecPlugin CpuFreqDef CpuFreqGovernors CredType DebugFlags DefCpuPerGPU 
DefMemPerCPU DefMemPerGPU DefMemPerNode DependencyParameters DisableRootJobs DownNodes 
EioTimeout EnforcePartLimits Epilog EpilogMsgTime EpilogSlurmctld ExtSensorsFreq ExtSensorsType 
FairShareDampeningFactor FederationParameters FirstJobId FrontendName GetEnvTimeout GresTypes 
GroupUpdateForce GroupUpdateTime HealthCheckInterval HealthCheckNodeState HealthCheckProgram 
InactiveLimit InteractiveStepOptions JobAcctGatherFrequency JobAcctGatherParams 
JobAcctGatherType JobCompHost JobCompLoc JobCompParams JobCompPass JobCompPort JobCompType 
JobCompUser JobContainerType JobFileAppend JobRequeue JobSubmitPlugins KeepPartInfo 
KeepPartState KillOnBadExit KillWait LaunchParameters LaunchType Licenses LogTimeFormat 
MCSParameters MCSPlugin MailDomain MailProg MaxArraySize MaxCPUsPerNode MaxDBDMsgs MaxJobCount 
MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxStepCount MaxTasksPerNode MessageTimeout 
MinJobAge MpiDefault MpiParams NodeFeatures NodeFeaturesPlugins NodeName NodeSet OverTimeLimit 
PartitionName PlugStackConfig PluginDir PowerParameters PowerPlugin PrEpParameters PrEpPlugins 
PreemptExemptTime PreemptMode PreemptType PriorityCalcPeriod PriorityDecayHalfLife 
PriorityFavorSmall PriorityFlags PriorityMaxAge PriorityParameters PrioritySiteFactorParameters 
PrioritySiteFactorPlugin PriorityType PriorityUsageResetPeriod PriorityWeightAge 
PriorityWeightAssoc PriorityWeightFairshare PriorityWeightJobSize PriorityWeightPartition 
PriorityWeightQOS PriorityWeightTRES PrivateData ProctrackType Prolog PrologEpilogTimeout 
PrologFlags PrologSlurmctld PropagatePrioProcess PropagateResourceLimits 
PropagateResourceLimitsExcept RebootProgram ReconfigFlags RequeueExit RequeueExitHold 
ResumeFailProgram ResumeProgram ResumeRate ResumeTimeout ResvEpilog ResvOverRun ResvProlog 
ReturnToService RoutePlugin SchedulerParameters SchedulerTimeSlice SchedulerType 
ScronParameters SelectType SelectTypeParameters SlurmSchedLogFile SlurmSchedLogLevel SlurmUser 
SlurmctldAddr SlurmctldDebug SlurmctldHost SlurmctldLogFile SlurmctldParameters 
SlurmctldPidFile SlurmctldPlugstack SlurmctldPort SlurmctldPrimaryOffProg 
SlurmctldPrimaryOnProg SlurmctldSyslogDebug SlurmctldTimeout SlurmdDebug SlurmdLogFile 
SlurmdOffSpec SlurmdParameters SlurmdPidFile SlurmdPort SlurmdSpoolDir SlurmdSyslogDebug 
SlurmdTimeout SlurmdUser SrunEpilog SrunPortRange SrunProlog StateSaveLocation SuspendExcNodes 
SuspendExcParts SuspendProgram SuspendRate SuspendTime SuspendTimeout SwitchParameters 
SwitchType TCPTimeout TRESBillingWeights TaskEpilog TaskPlugin TaskPluginParam TaskProlog TmpFS 
TopologyParam TopologyPlugin TraceJobs TrackWCKey TreeWidth UnkillableStepProgram 
UnkillableStepTimeout UsePAM UsePss VSizeFactor WaitTime
`)

// knownGlobalKey reports whether key is a known global key (case-insensitive). When it is not,
// it also returns the closest known key for a "did you mean" hint, or "".
func knownGlobalKey(key string) (string, bool) {
	best, bestDist := "", 4
	for _, k := range globalKeys {
		if strings.EqualFold(k, key) {
			return k, true
		}
		if d := distance(strings.ToLower(k), strings.ToLower(key)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, false
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
