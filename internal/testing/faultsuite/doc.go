// Package faultsuite is the fault tier of lockkit's tests: scenarios that
// run lock workloads against real servers (redis-server, memcached, on
// loopback) and the in-memory store while faults are injected — kills,
// pauses, restarts with and without persistence, slow and lossy links,
// failovers, evictions, CPU starvation, cancellation — and check what the
// locks kept with the harness of package faultkit: two holders at once,
// lost updates, stale writes accepted, validity beyond what the servers
// grant, keys left behind, goroutines left over.
//
// The package holds tests, and the scenarios that the fault tiers of the
// stores in other modules run too ([PausedHolder], [ElectionFaults]).
// Each scenario prints one machine-readable line (see
// contention.Report.Line) and asserts that nothing unsafe happened; each
// positive control runs a deliberately broken setup (a release without
// token check, a release never sent, a validity that ignores elapsed time
// on Redis and on memcached, a failover without WAIT, memcached without
// -M, a restart without delay) and asserts that
// the checkers catch it, since a checker that reports 0 on a known-unsafe
// setup is blind.
//
// Run it, and collect the report lines, with
//
//	LOCKKIT_FAULT_REPORT=/tmp/faults.txt go test -race ./internal/testing/faultsuite/
//
// docs/reliability.md shows the latest table and what each store does and
// does not guarantee.
package faultsuite
