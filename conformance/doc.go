// Package conformance checks that a [lock.Store] keeps the semantics the
// lockers rely on. A store author runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		conformance.TestStore(t, func(t *testing.T) lock.Store {
//			return mystore.New(newClient(t), mystore.WithPrefix(t.Name()))
//		}, nil)
//	}
//
// TestStore runs one named subtest per rule, each on a fresh store from the
// factory, and reports a broken rule as the call that broke it and what was
// expected, then why the rule matters and where it is written:
//
//	--- FAIL: TestConformance/ReleaseWrongToken
//	    basic.go:59: Release(r, wrongToken) = nil; want ErrNotHeld
//	    conformance.go:137: rule ReleaseWrongToken (conformance/basic.go:56): only the holder's token may release: otherwise a holder whose lock expired frees its successor's
//
// Rules that need an optional capability (Extend, TTL, Holder, fencing,
// raising fences, wait-for-release, queued acquisitions, Start, permits)
// or an option (Restart) are
// skipped when the store or the options lack it, with a message naming
// it ("store does not implement lock.Permitter").
//
// # Rules
//
//   - Acquisition and release: free and held resources (locks are not
//     re-entrant, through Acquire or AcquireFenced), a refused Acquire —
//     another owner's or the holder's own — leaves the holder's expiry
//     alone, compare-and-delete release
//     (wrong token, twice, never held, after expiry, after takeover),
//     long tokens compared whole, tokens compared byte for byte (case,
//     white space and Unicode normalization count), independent
//     resources, contention (exactly one winner per round),
//     and canceled or expired contexts
//     never reported as contention, as "not held" or as a successful
//     Release or Extend, nor a held resource read as free, nor a wait as
//     a release; calls whose deadlines, of 50µs to 1.5ms, pass while they
//     are in flight (DeadlineInFlight) answered by their deadline with
//     success or an error of their own (the context's or the transport's),
//     never ErrNotAcquired or ErrNotHeld, and the resource freed by
//     releases by the call's token, right after it and, as a request
//     given up on may reach the server after that, again at the end of
//     the round.
//   - Names: plain names are accepted; unusual ones (spaces, control
//     bytes, braces, Unicode, binary, 1 KiB) and lookalikes (names that
//     differ only in case, surrounding white space, after byte 250, in
//     normalization, by escaping, after a NUL, by a leading '#') are held
//     all at once and must be distinct locks — or refused through
//     [lock.ResourceValidator] with an error wrapping [lock.ErrInvalid].
//   - Time: expiry at the short TTL (held until the TTL less the
//     granularity, gone soon after it); every other
//     owner's Acquire refused until the TTL less the granularity has run
//     out, in the lock's last moments too (AcquireNearExpiry); LongTTL, a TTL of
//     five and a half seconds plus twice the granularity (not whole
//     seconds, so that a store that truncates TTLs to whole seconds
//     shows), set by every call that sets one
//     — Acquire, AcquireFenced, Extend, a refused Acquire, Start — at once,
//     each lock held until its TTL less the granularity; MaxTTL, lock.MaxTTL set by every such call kept as TTL reads it
//     (or refused with ErrInvalid); Extend (owner, shorter TTL, wrong
//     token, after expiry, after takeover, and racing the lock's expiry
//     and a new owner's Acquire without touching the new owner's TTL);
//     TTL read from below and above (not rounded up past the
//     granularity and the tolerance, and counting down: halfway through a lock's life, at
//     most what is left of it), and free once released or expired.
//   - Holder: the public part of the holder's token (after its last '~'),
//     never its secret; "" for a token without one; free once released
//     or expired.
//   - Fences: strictly increasing across releases and expiry, and across a
//     restart of the server (with Options.Restart); in the order holders
//     take the lock, under contention (FenceOrder); a lock taken with
//     AcquireFenced seen by Exists, TTL, Holder and Extend as Acquire's
//     is, and free to them and to WaitRelease once released
//     (FencedLock); RaiseFence(r, F) makes the next fence exceed F and
//     leaves the lock alone — a held lock keeps its TTL, neither
//     refreshed nor cut, and a free resource stays free
//     (RaiseFenceLeavesLock) — and a raise to near 2^64 is refused
//     (ErrInvalid) or never followed by a smaller fence.
//   - Waiting: WaitRelease returns at once when free (never locked, or
//     released or expired before the wait began: WaitFreeAfterExpiry),
//     blocks while held, wakes on release and on expiry, not for another
//     resource nor for an extension of the lock (with [lock.Extender]),
//     honours its context, and misses no release that happens as it
//     begins.
//   - Queued acquisitions ([lock.Queuer]): a free resource taken at once,
//     a nil Queued never called (QueueNilQueued), a zero Wait one attempt, a held one handed over at its release to
//     the first in line (no newcomer takes it in between), in the order
//     they got in line, or at its expiry with the TTL counted from the
//     handoff; a Wait that runs out, or a context that ends, leaves the
//     line and the lock is not handed to the caller that left; fences
//     increasing across handoffs. A store that reports
//     errors.ErrUnsupported, having taken nothing, skips them.
//   - Start ([lock.Starter]): the outcomes and fences of the blocking
//     methods, errors.ErrUnsupported for calls the store cannot make,
//     lock.ErrInvalid for a call of an unknown operation, dead
//     contexts (canceled and expired deadlines), each call answered by its
//     own deadline among calls with much shorter ones, and one cut short by
//     its deadline answered with an error of its own (the context's or the
//     transport's), never ErrNotAcquired; exactly one answer per call under
//     concurrency.
//   - Permits ([lock.Permitter]): exactly limit winners among concurrent
//     AcquirePermit calls, ReleasePermit by the wrong token refused (and
//     twice, and of a permit never taken), each permit counted by Permits
//     until its TTL less the granularity, whether AcquirePermit or
//     ExtendPermit set it, at the short TTL and at five and a half seconds
//     plus twice the granularity, all at once (PermitLives), expiry frees
//     the permits, each on its own while the others are still held, another limit refused
//     with lock.ErrLimitMismatch while permits are held (and nothing
//     changed) and granted once they have expired, canceled or expired
//     contexts never reported as an outcome (a ReleasePermit or
//     ExtendPermit, the holder's too, never as a success), ExtendPermit
//     keeps a permit, shortens it too, refuses a wrong token and never
//     re-creates an expired one, permits and locks of one name apart
//     (Exists sees no permit), fences
//     increasing, across the release and the expiry of every permit too
//     (when the store fences);
//     WaitPermit ([lock.PermitWaiter]) returns at once while a permit is
//     free, some held or none (WaitPermitPartlyHeld), blocks while all
//     are held, wakes on a release — of its own
//     resource, not another's — and on expiry, and honours its context.
//   - Semaphores and read-write locks built on the store (natively on a
//     Permitter, from plain locks otherwise): at most the limit of
//     workers inside through a lock.Semaphore, a writer of a
//     lock.RWLocker alone and readers together, and a waiting writer not
//     starved by readers that keep coming.
//   - Lockers: mutual exclusion through a lock.SingleLocker and a
//     lock.MultiLocker built on the store. They first check that
//     WaitRelease blocks while the resource is held, and stop there if it
//     does not: the lockers would spin on such a store.
//
// A lock must be held until its TTL less the granularity, counted from
// just before the call that set it was sent: a check that finds it gone
// fails only if its answer came before then, so a slow machine delays
// the checks but never fails a correct store.
//
// The stress rules (ReleaseRacesExpiry, ExtendRacesExpiry, FenceOrder,
// WaitReleaseRace, DeadlineInFlight, StartOwnDeadline) time many tries to land in a race
// window; on a fake clock they are exact, in real time they hit the
// window often enough to catch a store that is wrong in it.
//
// # Time
//
// Stores that talk to a server run in real time: rules that wait for
// expiry take a few short TTLs each, and LongTTL and PermitLives take one
// long TTL each (their checks run together); the whole suite takes about half a minute against
// a local server with a one-second granularity. Stores that live entirely
// in the process (such as package memory) can set Options.Synctest to run
// every rule on a testing/synctest fake clock. Under Synctest, a rule that
// leaves goroutines blocked (a leaked goroutine, a call that never
// returns) fails with synctest's deadlock report instead of aborting the
// test binary.
//
// # Restarts
//
// A store whose server the test can restart should set Options.Restart:
// the hook restarts it (as a crash would, with the persistence the server
// is configured with) and returns once the factory's stores can reach it
// again — drop the client's idle connections to the old process, or the
// first calls after the restart fail on them. FencingAcrossRestart then
// checks that fences after the restart exceed the fences before it.
//
// # Cleaning up
//
// A rule that passes leaves nothing held: it releases the locks and
// permits it took, or lets them expire, and ends the calls it started
// (their contexts end with the rule), so that no goroutine of the suite
// outlives it. (A lock.Semaphore over plain locks keeps its limit in a
// marker lock that lives for the TTL of its latest permit, as
// lock.NewSemaphore documents: the semaphore rules leave that behind.)
//
// The package depends on the standard library and package lock only.
package conformance
