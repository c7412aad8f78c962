package exq

import (
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

// The tests that judge time (latencies, per-second ticks, rates and fairness between nodes,
// heartbeat windows) cannot run beside the package's parallel tests: those keep both cores
// busy, and a starved node misses its tick, its window or its bound. One after another they
// took 85 of the package's 160 s while using about a tenth of the machine, since they mostly
// wait. So they run in two stages of their own, each a serial test (no parallel test runs
// beside it) whose subtests run together: the tests with child processes, then those whose
// nodes are in this process. Run one with -run 'TestTimedNodes/IdlePollBacksOff'.

// timedTest is one test of a stage: its name without the Test prefix, and its body.
type timedTest struct {
	name string
	run  func(*testing.T)
}

// timedFleets start child processes (kill them, pause them, count their ticks and starts).
// Longest first, so that the stage lasts about as long as its longest test.
var timedFleets = []timedTest{
	{"FleetPeriodicEnqueuesEachTickOnceWhileANodeIsKilledAndRestarted", testFleetPeriodicEnqueuesEachTickOnceWhileANodeIsKilledAndRestarted},
	{"FleetANodePausedPastItsWindowDropsItsOldRunsAndLosesNoJob", testFleetANodePausedPastItsWindowDropsItsOldRunsAndLosesNoJob},
	{"FleetAKilledNodesJobsOfRemovedAndUnlistedQueuesAreRescued", testFleetAKilledNodesJobsOfRemovedAndUnlistedQueuesAreRescued},
	{"FleetKilledProcessFreesItsSlotsWithinItsHeartbeatWindow", testFleetKilledProcessFreesItsSlotsWithinItsHeartbeatWindow},
	{"FleetKeyedSequencesSurviveKilledNodes", testFleetKeyedSequencesSurviveKilledNodes},
	{"FleetKeyedSequencesSurviveAPausedNode", testFleetKeyedSequencesSurviveAPausedNode},
	{"KilledNodesJobsAreRescuedByAnotherNodeAndComplete", testKilledNodesJobsAreRescuedByAnotherNodeAndComplete},
	{"KilledNodesStepsAreNotRunAgainAfterTheRescue", testKilledNodesStepsAreNotRunAgainAfterTheRescue},
	{"AKilledFastNodeIsRescuedWithinItsOwnWindowByASlowNode", testAKilledFastNodeIsRescuedWithinItsOwnWindowByASlowNode},
}

// timedNodes run their nodes in this process.
var timedNodes = []timedTest{
	{"GlobalLimitSlotsAreSharedFairlyWithASlowNode", testGlobalLimitSlotsAreSharedFairlyWithASlowNode},
	{"ForeignPushesStartWithinMillisecondsOnAnIdleNode", testForeignPushesStartWithinMillisecondsOnAnIdleNode},
	{"IdleNodeRunsAnnouncedJobsPromptly", testIdleNodeRunsAnnouncedJobsPromptly},
	{"QuietReachesRedisWithinASecond", testQuietReachesRedisWithinASecond},
	{"IdlePollBacksOffAndWakeUpsReset", testIdlePollBacksOffAndWakeUpsReset},
	{"SchedulerSleepsUntilTheEarliestJobOrItsCap", testSchedulerSleepsUntilTheEarliestJobOrItsCap},
	{"BusyCountAndBusyListChangeTogetherWithinASecond", testBusyCountAndBusyListChangeTogetherWithinASecond},
	{"PollingBacksOffWhileRedisIsDownAndRecovers", testPollingBacksOffWhileRedisIsDownAndRecovers},
	{"AChangeAfterACalmSpellIsWrittenAtOnce", testAChangeAfterACalmSpellIsWrittenAtOnce},
	{"ACallCancelledWhileQueuedIsNeverWritten", testACallCancelledWhileQueuedIsNeverWritten},
	{"SchedulerPassesAtMostOncePerInterval", testSchedulerPassesAtMostOncePerInterval},
	{"WaitReplicasWithoutAReplicaReportsNotReplicatedAndKeepsTheJob", testWaitReplicasWithoutAReplicaReportsNotReplicatedAndKeepsTheJob},
	{"ScheduledWritesAnnounceOnlyAnEarlierHead", testScheduledWritesAnnounceOnlyAnEarlierHead},
	{"WaitReplicasWaitsNoLongerThanTheCallersDeadline", testWaitReplicasWaitsNoLongerThanTheCallersDeadline},
}

func TestTimedFleets(t *testing.T) { runStage(t, timedFleets) }

// timedThroughput are fleets that measure how many jobs their child processes start: each
// runs alone, after the fleet stage. With the other fleets' processes beside them (about 20
// child processes of a -race binary on two cores) they measured the machine: 42-53 % of the
// ideal starts where alone they reach 85-90 %. (The fleets above judge no throughput.)
var timedThroughput = []timedTest{
	{"GlobalLimitCapsRunningJobsAcrossProcesses", testFleetGlobalLimitCapsRunningJobsAcrossProcesses},
	{"RateSpreadsStartsEvenlyAcrossProcesses", testFleetRateSpreadsStartsEvenlyAcrossProcesses},
}

// TestFleetThroughput runs the throughput fleets one after another. Run one with
// -run 'TestFleetThroughput/RateSpreads'.
func TestFleetThroughput(t *testing.T) {
	if testutil.OnCluster() {
		t.Skip("its child nodes take a single-node URL, as the fleet stage's do")
	}
	for _, tt := range timedThroughput {
		t.Run(tt.name, tt.run)
	}
}

func TestTimedNodes(t *testing.T) { runStage(t, timedNodes) }

// runStage runs the stage's tests together; the stage ends when all of them have (Go runs a
// test's parallel subtests after its body returns, and the next serial test after them).
// At most stageParallel of them run at once, whatever -test.parallel says (the package's other
// tests run 16 at a time): all 14 of the nodes' stage at once starved their timing (a fetch
// attempt missed in a 1.5 s window, a p99 past its bound), which 8 at a time never did.
func runStage(t *testing.T, tests []timedTest) {
	slots := make(chan struct{}, stageParallel)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			tt.run(t)
		})
	}
}

// stageParallel is how many tests of a timed stage run at once: the package's parallelism
// before it rose to 16 (rootParallel).
const stageParallel = 8
