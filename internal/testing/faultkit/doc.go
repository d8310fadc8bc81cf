// Package faultkit is the test half of the fault tier's harness: it
// reports a scenario's figures from a test ([Emit]), checks that no
// goroutine outlives a run ([Goroutines]) and that no key is left on the
// servers ([Residue]), and turns the report lines of a run into the table
// of docs/reliability.md ([Table], cmd/faulttable). It also holds what the
// fault tiers of several modules share: workloads on semaphores and
// read-write locks ([Semaphores], [ReadersWriters]) and election
// scenarios with their judge ([Election], [ElectionRun.Report]).
//
// The workload runner, the recorder and the mutual-exclusion checkers
// are production code in package internal/contention, which lockctl check
// uses too; this package is what only tests need.
package faultkit
