// Package redissuite is the behaviour suite of the Redis lock stores: the
// rueidis store (stores/redis) and the go-redis store (stores/goredis)
// share one implementation (internal/redisstore), and each runs every
// test here through its adapter, against real redis-server processes — a
// single server, a Sentinel-managed master with a replica, a Redis
// Cluster, independent masters for Redlock — including the fault
// scenarios (kills, pauses, SCRIPT FLUSH, failovers).
//
// A store's tests call [Run] with a [Factory]; each test is a subtest.
// What only one adapter does (its constructor, its client's quirks) is
// tested in the adapter's own package.
package redissuite

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// Store is what both adapters' stores are: every capability of package
// lock, and the administrative operations.
type Store interface {
	lock.Store
	lock.FenceRaiser
	lock.Extender
	lock.TTLReader
	lock.HolderReader
	lock.Waiter
	lock.Queuer
	lock.ResourceValidator
	lock.Starter
	lock.Permitter
	lock.PermitWaiter
	ForceRelease(ctx context.Context, resource string) (bool, error)
	LastFence(ctx context.Context, resource string) (uint64, bool, error)
	String() string
}

// Factory makes the stores of one adapter.
type Factory struct {
	// Client returns a new client of the adapter's kind, closed when t
	// ends, for a *redistest.Server, *redistest.Cluster or
	// *redistest.Sentinel (through the Sentinel, to its master).
	Client func(t testing.TB, server any) any
	// New returns a store on a client made by Client.
	New func(client any, opts ...redisstore.Option) (Store, error)
	// Engine returns the shared store inside one of the adapter's.
	Engine func(Store) *redisstore.Store
}

var prefixes atomic.Int64

// On returns a store on client, with a key prefix no other store of the
// test binary uses unless opts give one.
func (f Factory) On(t testing.TB, client any, opts ...redisstore.Option) Store {
	t.Helper()
	opts = append([]redisstore.Option{redisstore.WithPrefix(fmt.Sprintf("test%d:", prefixes.Add(1)))}, opts...)
	s, err := f.New(client, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// Server returns a store on srv, through a client of its own.
func (f Factory) Server(t testing.TB, srv *redistest.Server, opts ...redisstore.Option) Store {
	t.Helper()
	return f.On(t, f.Client(t, srv), opts...)
}

// Cluster returns a store on the cluster c, through a client of its own.
func (f Factory) Cluster(t testing.TB, c *redistest.Cluster, opts ...redisstore.Option) Store {
	t.Helper()
	return f.On(t, f.Client(t, c), opts...)
}

// Run runs every test of the suite as a subtest of t. The cluster tests
// use redistest.SharedCluster: the test binary's TestMain must call
// redistest.CloseShared.
func Run(t *testing.T, f Factory) {
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"Conformance", f.testConformance},
		{"ConformanceCluster", f.testConformanceCluster},
		{"ConformanceSentinelWaitReplicas", f.testConformanceSentinel},
		{"ConformanceRestartGuard", f.testConformanceRestartGuard},
		{"ConformanceBeforeRedis7", f.testConformanceBeforeRedis7},
		{"ConformanceSharedBatches", f.testConformanceSharedBatches},
		{"Validation", f.testValidation},
		{"BadInputRefusedBeforeSending", f.testBadInputRefusedBeforeSending},
		{"OptionsNamed", f.testOptionsNamed},
		{"TTLRoundedUp", f.testTTLRoundedUp},
		{"OddBytes", f.testOddBytes},
		{"NoScriptNeverReachesCaller", f.testNoScriptNeverReachesCaller},
		{"KeysOnCluster", f.testKeysOnCluster},
		{"AmbiguousOutcomes", f.testAmbiguousOutcomes},
		{"TTLOfKeyWithoutTTL", f.testTTLOfKeyWithoutTTL},
		{"ScriptsReloadAfterFlush", f.testScriptsReloadAfterFlush},
		{"WrongTypeIsAnError", f.testWrongTypeIsAnError},
		{"WaitReplicasStandalone", f.testWaitReplicasStandalone},
		{"WaitReplicasCluster", f.testWaitReplicasCluster},
		{"FencesIncrease", f.testFencesIncrease},
		{"FencesShared", f.testFencesShared},
		{"FencedClaimAfterScriptFlush", f.testFencedClaimAfterScriptFlush},
		{"SharedCallsAnswerTheirOwn", f.testSharedCallsAnswerTheirOwn},
		{"FencesBehindTheClock", f.testFencesBehindTheClock},
		{"FencesAcrossRestart", f.testFencesAcrossRestart},
		{"FencesAfterPromotionWithLostWrites", f.testFencesAfterPromotion},
		{"FencesLeaveNothing", f.testFencesLeaveNothing},
		{"RaiseFence", f.testRaiseFence},
		{"RaiseFenceToMax", f.testRaiseFenceToMax},
		{"LastFence", f.testLastFence},
		{"ForceReleaseAdmin", f.testForceReleaseAdmin},
		{"ForceReleaseWakesWaiters", f.testForceReleaseWakesWaiters},
		{"RestartGuard", f.testRestartGuard},
		{"RestartGuardInRedlock", f.testRestartGuardInRedlock},
		{"RestartGuardOptions", f.testRestartGuardOptions},
		{"RestartGuardGivesWokenWaiterHeadStart", f.testRestartGuardGivesWokenWaiterHeadStart},
		{"RestartGuardRefusesLongTTLs", f.testRestartGuardRefusesLongTTLs},
		{"ForeverTTL", f.testForeverTTL},
		{"StartBatchAfterScriptFlush", f.testStartBatchAfterScriptFlush},
		{"StartOnStalledServer", f.testStartOnStalledServer},
		{"StartOwnDeadlines", f.testStartOwnDeadlines},
		{"StartFenced", f.testStartFenced},
		{"CanceledLockLeavesNothing", f.testCanceledLockLeavesNothing},
		{"WaitFreeReturnsAtOnce", f.testWaitFreeReturnsAtOnce},
		{"WaitersTakeTurns", f.testWaitersTakeTurns},
		{"WaitersOfOneProcessLongestFirst", f.testWaitersOfOneProcessLongestFirst},
		{"WaitersOfOneProcessInOrderAfterExpiry", f.testWaitersOfOneProcessInOrderAfterExpiry},
		{"WaitCanceledWaiterLeavesQueue", f.testWaitCanceledWaiterLeavesQueue},
		{"WaitLeftEntriesDoNotWake", f.testWaitLeftEntriesDoNotWake},
		{"WaitRechecksOnExpiry", f.testWaitRechecksOnExpiry},
		{"WaitSeesShorterExpiry", f.testWaitSeesShorterExpiry},
		{"WaitSeesKeyWithoutTTLDeleted", f.testWaitSeesKeyWithoutTTLDeleted},
		{"WaitAfterScriptFlush", f.testWaitAfterScriptFlush},
		{"WaitServerDies", f.testWaitServerDies},
		{"WaitOnClusterLeavesNothing", f.testWaitOnClusterLeavesNothing},
		{"WaitCanceledOnStalledServer", f.testWaitCanceledOnStalledServer},
		{"WaitStoresShareClient", f.testWaitStoresShareClient},
		{"WaitOneWakeAcrossProcesses", f.testWaitOneWakeAcrossProcesses},
		{"WokenWaiterKeepsItsTurn", f.testWokenWaiterKeepsItsTurn},
		{"WakeSurvivesLaterWait", f.testWakeSurvivesLaterWait},
		{"ClaimOnlyAfterWake", f.testClaimOnlyAfterWake},
		{"OwnReservationBeforeHandOn", f.testOwnReservationBeforeHandOn},
		{"UnsentClaimIsClaimedAgain", f.testUnsentClaimIsClaimedAgain},
		{"LostClaimReplyIsClaimedAgain", f.testLostClaimReplyIsClaimedAgain},
		{"UnclaimedReservationLapses", f.testUnclaimedReservationLapses},
		{"ReleaseHandsOff", f.testReleaseHandsOff},
		{"Queued", f.testQueued},
		{"Fairness", f.testFairness},
		{"Faults", f.testFaults},
		{"Permits", f.testPermits},
	} {
		t.Run(tc.name, tc.test)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// CtxFor returns a context that ends after d or with t.
func CtxFor(t *testing.T, d time.Duration) context.Context { return ctxFor(t, d) }

// Eventually polls cond every 10ms for at most 5s, and fails t if it is
// still false.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, cond)
}
