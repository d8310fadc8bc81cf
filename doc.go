// Package lock takes distributed locks on named resources, over
// interchangeable stores: Redis (one node, Sentinel, Cluster, or several
// independent masters), PostgreSQL, etcd, memcached, and memory.
//
// # Model
//
// A [Store] keeps locks: it sets a resource to an owner token with a time
// to live if the resource is free, and releases or extends it only for the
// token it was taken with. Stores make one attempt per call and nothing
// more; the stores live in sub-packages (stores/memory, stores/redis on
// rueidis, stores/memcache, and in modules of their own stores/goredis on
// go-redis, stores/postgres on pgx and stores/etcd) and anyone can write
// another and prove it with package conformance.
//
// A [Locker] does everything else: validation, token generation, retries,
// validity accounting, and remembering what it holds. [SingleLocker] takes
// locks in one store; [MultiLocker] takes each lock in several independent
// stores at once and holds it when a [Quorum] of them granted it (the
// Redlock algorithm). Both return a [Lock], a plain value that can be
// serialised and released from another process.
//
//	locker, err := lock.NewSingle(store, nil)
//	...
//	l, err := locker.Lock(ctx, "invoice/42", 30*time.Second)
//	if err != nil {
//		return err // lock.ErrNotAcquired, a context error, or lock.ErrUnavailable
//	}
//	defer locker.Unlock(context.WithoutCancel(ctx), l)
//
// [Run] wraps the usual pattern: acquire, keep the lock extended while a
// function runs, cancel the function's context if the lock is lost (at
// its validity's end at the latest), and always release; [FromContext]
// gives the function the lock as of its latest extension.
//
// # Semaphores and read-write locks
//
// [NewSemaphore] lets up to n holders hold a resource at once, and
// [NewRWLocker] many readers or one writer, with a waiting writer not
// starved by readers. Both are built on a Locker (either kind) and are
// Lockers themselves, so Run, retries, Extend and Shutdown work as for
// locks. A store that keeps counted permits ([Permitter]) grants one in
// a single call; elsewhere permits are plain locks on names derived from
// the resource. Callers that disagree on a semaphore's n get
// [ErrLimitMismatch]. docs/semaphores.md has the guarantees per store.
//
// # Validity
//
// A lock is only as good as its validity: Lock.ValidUntil is the end of
// the time during which the holder may assume it holds the lock alone.
// It is counted from before the request was sent, and reduced by a
// clock-drift allowance (ttl × Options.DriftFactor + 2ms, 1% by default)
// and by the stores' TTL granularity (memcached counts whole seconds). A
// holder should check [Lock.Valid] before each protected write, and keep
// work well inside the TTL or use [Run], which extends the lock.
//
// # Elections, run-once jobs and lock delay
//
// An [Election] elects one leader at a time for a named role over any
// Locker that lets one holder in at a time (NewElection refuses a
// Semaphore of more than one permit and an RWLocker's reader side): the
// leader holds a lock on the role, which the same loop as Run's keeps
// extended. [Election.Campaign] waits until the caller is
// elected and returns its [Term]; [Term.Resign] frees the role at once;
// [Election.Lead] does both around one function; [Election.Leader] tells
// whether someone leads and, where the locker has a Holder method, who.
//
// The term's context is what makes leadership safe under faults. It ends
// with a cause — [ErrResigned], [ErrLost], [ErrMaxHold] — and a term
// whose renewals stall (a paused process, a slow or partitioned store)
// ends a tenth of the lock's validity before the lock does. Nobody else
// can be elected before the lock's validity has run out, so a leader
// that checks its term's context before each action never acts while
// another leads: Err reports the end from the instant it passes, Done
// closes a scheduling delay later. Between its check and its write a
// leader can still pause; each term carries the lock's fence — above
// every earlier term's where the stores fence — for the resource to
// refuse a deposed leader's writes (see [FenceGuard]). This is the
// failure of most leader-election bugs (two leaders after a pause or a
// slow renewal): the old leader acts on after its lease because nothing
// stops it in time, and nothing downstream can tell its writes apart.
//
// [RunOnce] is the cron pattern: every replica tries, one runs the job,
// the others get [ErrSkipped] at once. With [MinInterval] the lock is
// kept, after the job returns, until the interval has passed since the
// run began, so replicas whose schedules fire a little apart do not run
// it twice.
//
// Options.LockDelay (Chubby's lock-delay) keeps a lock whose holder
// vanished — it neither extended nor released it — from being taken again
// until the delay after its TTL, while Unlock frees it at once: a holder
// that pauses past its validity and wakes within the delay finds nobody
// else has been inside. The stores keep each lock for TTL + delay; the
// validity the holder sees stays the TTL's. No store capability is
// needed.
//
// # Retries
//
// TryLock makes one attempt. Lock retries while the resource is held by
// another owner or the stores fail, as a [Retry] says: a number of
// attempts or until the context is done ([Forever], the default), with a
// delay that is randomised (so waiters do not hit the stores in waves) and
// can grow exponentially up to a cap. On stores that can notify releases
// ([Waiter]), a waiter wakes when the lock is released instead of sleeping
// out its delay; on a store that keeps a line ([Queuer]: Redis, etcd), a
// SingleLocker's Lock gets in line and the release hands it the lock; on
// the others the default policy polls every 5–10ms for a quarter of a
// second before it backs off, so that no waiter starves.
// Retry.Attempts counts every attempt: Retry{Attempts: 3} makes three.
//
// # Errors
//
// Errors are [*Error] values naming the operation, the resource and, for a
// MultiLocker, each store that did not succeed and why. Match them with
// errors.Is:
//   - [ErrNotAcquired]: held by another owner after every allowed attempt.
//   - [ErrNotHeld]: Unlock or Extend of a lock that expired or was taken
//     over — the critical section outlived its lock.
//   - context.Canceled, context.DeadlineExceeded: the caller's context
//     ended. Never reported as ErrNotAcquired, so cancellation is always
//     distinguishable from contention. The context's cause
//     ([context.Cause]) is in the chain, where it matches what it matches
//     alone except this package's sentinels and the context errors: a
//     context canceled with another call's ErrNotAcquired (as errgroup
//     cancels with the group's first error) ends a call with an error
//     that matches context.Canceled, not ErrNotAcquired.
//   - [ErrUnavailable]: stores failed. A store's own error (a connection
//     reset, say) is part of the chain, where it matches what it matches
//     alone except the outcomes (ErrNotAcquired, ErrNotHeld,
//     ErrUnavailable, ErrClosed) and the context errors: only the overall
//     cause matches those, so at most one of them matches. An
//     outcome the locker could not be sure of is never reported as "not
//     acquired": the locker releases what the store may hold.
//   - [ErrInvalid]: bad input, refused before anything is sent to a store,
//     or by a store in the call itself: retrying does not help.
//   - [ErrClosed]: the locker was shut down.
//   - [ErrStaleFence]: a [FenceGuard] refused a write whose fence is stale.
//   - [ErrLimitMismatch]: a semaphore's callers disagree on its limit (the
//     error matches ErrInvalid too: retrying does not help).
//
// # Capabilities
//
// Besides the three methods every store has, a store may offer optional
// capabilities, discovered by type assertion; each has a fallback:
//   - [Extender] (Extend): without it (on a MultiLocker, without a quorum
//     of stores that have it), Extend reports errors.ErrUnsupported and
//     Run ends the function's context when the validity runs out.
//   - [Fencer] (fencing tokens): without it, or with Options.NoFence,
//     Lock.Fence is 0.
//   - [FenceRaiser] (fences that can be raised): a MultiLocker fences only
//     when every store is one; otherwise its locks carry Fence 0.
//   - [Waiter] (wait for release): without it, waiters sleep their delay.
//   - [Queuer] (a line of waiters kept by the store, the lock handed over
//     by the release): without it, a SingleLocker's Lock waits with
//     Waiter, or sleeps, between attempts.
//   - [TTLReader] (remaining TTL): not needed by the lockers.
//   - [HolderReader] (who holds a lock): without it, the lockers' Holder
//     reports errors.ErrUnsupported.
//   - [Granular] (coarse expiry): without it, expiry is taken as exact.
//   - [ResourceValidator] (names the store cannot hold): without it, every
//     non-empty name is accepted.
//   - [Starter] (start a call without waiting for it): without it, a
//     MultiLocker runs each store call in a goroutine of its own.
//   - [Permitter] (counted permits): without it, a [Semaphore] takes plain
//     locks on derived names.
//   - [PermitWaiter] (wait for a free permit): without it, a Semaphore over
//     a Permitter sleeps its retry delay between attempts.
//
// # Guarantees
//
// A lock with a TTL gives mutual exclusion only as long as the holder
// stays within its validity and the store keeps its data. What each
// setup promises:
//   - One store (one Redis node, one memcached server): mutual exclusion
//     while that server lives and keeps its data. A restart without
//     persistence, or a memcached eviction, loses every lock on it; the
//     holder finds out at its next Extend or Unlock (ErrNotHeld).
//   - Redis with replicas (Sentinel, Cluster): replication is
//     asynchronous, so a failover can lose a lock that was granted but not
//     yet replicated; the Redis store's WithWaitReplicas option narrows
//     that window.
//   - Several independent stores with a majority quorum (Redlock):
//     mutual exclusion survives the loss of a minority of the stores,
//     provided a store that restarts does not come back empty while locks
//     it granted are still valid, and clocks do not run faster than the
//     drift allowance. Redlock locks carry fences when every store can
//     raise them (FenceRaiser): the memory, Redis, memcached and
//     PostgreSQL stores can, etcd's cannot.
//   - No lock with a TTL survives a holder that pauses (GC, swap, a
//     stopped VM) past its validity and then writes: guard such writes
//     with a fence (Lock.Fence) that the protected resource checks, and
//     refuse writes carrying a fence lower than the highest seen
//     ([FenceGuard] in process; the same check in SQL is in the
//     examples).
package lock
