// Package lock takes distributed locks on named resources, over
// interchangeable stores: Redis (one node, Cluster, or several independent
// masters), memcached, and memory.
//
// # Model
//
// A [Store] keeps locks: it sets a resource to an owner token with a time
// to live if the resource is free, and releases or extends it only for the
// token it was taken with. Stores make one attempt per call and nothing
// more; the stores live in sub-packages (stores/memory, stores/redis on
// rueidis, stores/goredis on go-redis, stores/memcache) and anyone can
// write another and prove it with package conformance.
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
// # Retries
//
// TryLock makes one attempt. Lock retries while the resource is held by
// another owner or the stores fail, as a [Retry] says: a number of
// attempts or until the context is done ([Forever], the default), with a
// delay that is randomised (so waiters do not hit the stores in waves) and
// can grow exponentially up to a cap. On stores that can notify releases
// ([Waiter]), a waiter wakes when the lock is released instead of sleeping
// out its delay; on the others the default policy polls every 5–10ms for a
// quarter of a second before it backs off, so that no waiter starves.
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
//     distinguishable from contention.
//   - [ErrUnavailable]: stores failed. A store's own error (a connection
//     reset, say) is part of the chain. An outcome the locker could not be
//     sure of is never reported as "not acquired": the locker releases
//     what the store may hold.
//   - [ErrInvalid]: bad input, refused before anything is sent to a store.
//   - [ErrClosed]: the locker was shut down.
//   - [ErrStaleFence]: a [FenceGuard] refused a write whose fence is stale.
//   - [ErrLimitMismatch]: a semaphore's callers disagree on its limit (the
//     error matches ErrInvalid too: retrying does not help).
//
// # Capabilities
//
// Besides the three methods every store has, a store may offer optional
// capabilities, discovered by type assertion; each has a fallback:
//   - [Extender] (Extend): without it, Extend reports errors.ErrUnsupported
//     and Run ends the function's context when the validity runs out.
//   - [Fencer] (fencing tokens): without it, or with Options.NoFence,
//     Lock.Fence is 0. A MultiLocker fences when every store is a
//     [FenceRaiser].
//   - [Waiter] (wait for release): without it, waiters sleep their delay.
//   - [TTLReader] (remaining TTL): not needed by the lockers.
//   - [Granular] (coarse expiry): without it, expiry is taken as exact.
//   - [ResourceValidator] (names the store cannot hold): without it, every
//     non-empty name is accepted.
//   - [Starter] (start a call without waiting for it): without it, a
//     MultiLocker runs each store call in a goroutine of its own.
//   - [Permitter] (counted permits) and [PermitWaiter] (wait for a free
//     permit): without them, a [Semaphore] takes plain locks on derived
//     names.
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
//     yet replicated; the Redis store's WaitReplicas option narrows that
//     window.
//   - Several independent stores with a majority quorum (Redlock):
//     mutual exclusion survives the loss of a minority of the stores,
//     provided a store that restarts does not come back empty while locks
//     it granted are still valid, and clocks do not run faster than the
//     drift allowance. Redlock locks carry fences when every store can
//     raise them (FenceRaiser): the memory store can.
//   - No lock with a TTL survives a holder that pauses (GC, swap, a
//     stopped VM) past its validity and then writes: guard such writes
//     with a fence (Lock.Fence) that the protected resource checks, and
//     refuse writes carrying a fence lower than the highest seen
//     ([FenceGuard] in process; the same check in SQL is in the
//     examples).
package lock
