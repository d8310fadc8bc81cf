// Package contention runs a lock workload — workers fighting over a few
// resources, optionally while faults are injected — records every
// operation, and checks what the locks kept: it detects two holders at
// once instead of counting successes. lockctl check runs it against a
// user's stores; the fault tier (internal/testing/faultsuite) runs it
// against real servers while internal/testing/faultproxy and
// internal/testing/testserver inject faults. It does not import testing:
// the test-only half (reporting from a test, goroutine and residue checks)
// is internal/testing/faultkit.
//
// # Recording
//
// A [Recorder] wraps each client's [lock.Locker] ([Recorder.Locker]) and
// records every Lock, TryLock, Extend and Unlock as an [Op]: client, kind,
// resource, token, start and end on the monotonic clock (offsets from the
// recorder's start), outcome, the validity the library reported and the
// fence. The outcome is what the client can know ([Classify]): OK, Refused
// (lock.ErrNotAcquired), NotHeld (lock.ErrNotHeld) or Unknown. A timeout,
// a canceled context or a failing store is Unknown, never Refused: the
// request may have reached a store and taken effect, and counting it as a
// refusal would hide the very cases where a lock is granted to a client
// that does not know it. Fault windows are recorded with
// [Recorder.Fault].
//
// # Claims and violations
//
// Each OK acquisition makes a [Claim]: from the moment Lock returned to
// the earlier of the moment Unlock was called and the end of the validity
// last reported (by the acquisition or an extension). Within its claim the
// holder was entitled to assume it was alone. Two claims on one resource,
// by different locks, that intersect for a positive time are a
// mutual-exclusion violation ([CheckOverlap]). A claim ends at the
// reported validity, not at the release, so a library that reports more
// validity than the servers grant is caught even when its holders release
// late; and workers check validity before every protected write, so a
// holder never writes outside its claim (unless [Config].BeforeWrite
// stalls it there on purpose).
//
// Semaphores and read-write locks: a workload whose lockers are
// lock.Semaphore values sets Config.Limit, and the checker
// ([CheckHolders]) then reports a claim that began while Limit others were
// held; one whose clients hold the two sides of a lock.RWLocker sets
// Config.Shared, and shared claims (readers, recorded through
// [Recorder.SharedLocker]) may overlap one another but never an
// exclusive one. [CheckOverlap] is CheckHolders with limit 1.
//
// # The other checkers
//
//   - Lost updates ([Counter]): the protected section reads a counter,
//     sleeps, and writes back the value plus one; writes made minus the
//     value reached is the number of updates lost to interleaving.
//   - Fencing ([FencedResource], [CheckFences]): the resource accepts a
//     write only with a fence at least the highest it accepted. A write is
//     stale if the resource had already accepted a write made under a
//     strictly newer lock (acquired after this one's acquisition returned);
//     stale writes accepted must be 0. Staleness is judged from the
//     recorded acquisitions, so fences that do not follow the grants are
//     caught.
//   - Validity vs server ([CheckValidity]): right after an acquisition,
//     the scenario reads the key's remaining TTL on the servers; the
//     reported validity must not outlive the latest possible expiry on a
//     quorum of them (the end of the read plus the quorum-th largest TTL).
//   - Latency ([AcquireLatencies], [Percentile]), success rate during the
//     faults ([SuccessRate]) and recovery time ([Recovery]).
//   - Residue (faultkit.Residue, filling [Report].Residue): no key of the
//     run may remain on any server a TTL after it; and no goroutine may
//     outlive it (faultkit.Goroutines, filling [Report].LeakedGoroutines).
//
// # Running a scenario
//
// [Run] drives Workers clients, each with its own locker, looping Lock →
// protected section → Unlock on a few resources for a duration or a
// number of locks, and injects each [Fault] at its time (healing it at the
// end of its window, or at the end of the run). [Result.Report] computes
// the figures and [Report.Line] renders them as one machine-readable line,
// which a test prints with faultkit.Emit (which also appends it to the
// file named by LOCKKIT_FAULT_REPORT):
//
//	base := faultkit.Goroutines()
//	res, err := contention.Run(ctx, contention.Config{
//		Workers:   4,
//		NewLocker: func(int) (lock.Locker, func(), error) { ... one client ... },
//		TTL:       time.Second,
//		Hold:      50 * time.Millisecond,
//		Duration:  10 * time.Second,
//		Faults: []contention.Fault{{
//			Name: "pause master", At: 3 * time.Second, For: 2 * time.Second,
//			Inject: master.Pause, Heal: master.Resume,
//		}},
//	})
//	...
//	rep := res.Report("pause-master", "redis")
//	rep.Residue, _ = faultkit.Residue(ctx, ttl+time.Second, countKeys)
//	rep.LeakedGoroutines = len(base.Leaked(5 * time.Second))
//	faultkit.Emit(t, rep)
//	if bad := rep.Unsafe(); bad != "" {
//		t.Errorf("pause-master: %s", bad)
//	}
//
// Every checker has a positive control in this package's tests: a
// deliberately broken setup on which it must report a violation, since a
// checker that reports 0 on a known-unsafe setup is blind.
package contention
