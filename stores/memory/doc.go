// Package memory is an in-memory lock store: the reference implementation
// of [lock.Store] and the fake to put in unit tests.
//
// A Store keeps its locks in process memory, so it gives mutual exclusion
// between goroutines of one process only. Use it in tests of code that
// takes locks, and as the model the other stores are checked against: it
// passes the whole conformance suite.
//
// # Capabilities
//
// Every optional capability of package lock but Granular and
// ResourceValidator, which it has no use for (TTLs are exact, and every
// non-empty name is valid), and Queuer: in one process a woken waiter
// takes the lock in the same instant, so a line kept by the store would
// save nothing:
//   - [lock.Extender]: Extend.
//   - [lock.TTLReader]: TTL.
//   - [lock.HolderReader]: Holder, the public part of the holder's token.
//   - [lock.Fencer] and [lock.FenceRaiser]: AcquireFenced, with fences
//     strictly increasing per resource for the life of the Store, and
//     RaiseFence.
//   - [lock.Waiter]: WaitRelease blocks without polling and is woken by
//     Release, Expire or expiry; a release wakes one waiter, in arrival
//     order, so waiters take turns instead of stampeding (Expire wakes
//     one too). A lock's expiry wakes every waiter, as the lock.Waiter
//     contract has it: they race for the lock, and arrival order is not
//     kept.
//   - [lock.Permitter] and [lock.PermitWaiter]: counted permits, for a
//     lock.Semaphore or lock.RWLocker in one call: AcquirePermit,
//     ReleasePermit, ExtendPermit, Permits; WaitPermit is woken by one
//     release per freed permit, in arrival order, and by expiry.
//     ExpirePermits makes a resource's permits expire now.
//   - [lock.Starter]: Start makes the call at once on the caller's
//     goroutine (in a goroutine of its own while faults are injected), so
//     a lock.MultiLocker over memory stores starts no goroutine per call.
//
// TTLs are exact: the store has no granularity.
//
// Bad input — an empty resource or token, a TTL of zero or less, a
// permit limit below one, a nil context — is refused with an error matching lock.ErrInvalid
// that says what is wrong, before anything happens: the call changes
// nothing and spends no injected fault.
//
// # Design
//
// Locks live in 64 shards, each a mutex and a map, so goroutines locking
// distinct resources rarely contend. No goroutine or timer is started per
// lock. A released lock leaves its entry in the map, free, so that locking
// the resource again reuses it (no map insertion or deletion on the hot
// path), as long as its shard keeps fewer than 8 such entries; past that (a
// caller locking a new name each time) a release takes its entry out of
// the map and keeps it for the next new name. Expired entries are swept
// out whenever a shard has doubled in size since its last sweep, so
// memory stays bounded by the number of live locks. A lock+unlock pair
// costs about 100–130ns, depending on the machine, and no allocation on
// one core (BenchmarkStore); on a new name each time, about 190ns and no
// allocation of the store's (BenchmarkStoreFresh).
//
// # Testing with it
//
// The Store reads the time with time.Since and waits with timers, so inside a
// testing/synctest bubble it runs on the bubble's fake clock: tests of
// expiry, retries and extension need no sleeps.
//
// Inject makes the next calls fail, slow down, lose their reply after
// taking effect, or land after their caller gave up (Fault.InFlight), and
// Expire forces a lock to expire, so tests can exercise their own error
// paths:
//
//	store.Inject(memory.Fault{Ops: memory.OpRelease, Err: errors.New("connection reset")})
//	store.Expire("orders/42") // the holder's next Extend reports lock.ErrNotHeld
//
// The lockers' background work after a store failure (a MultiLocker
// asking failed stores again, releases tried again later) waits on timers,
// not in goroutines, so a synctest test may end while some is pending —
// but not while one of its store calls is under way: a call slowed by a
// Fault's Delay is a goroutine until it ends (within the locker's
// StoreTimeout), and a bubble whose test returns before then fails with a
// deadlock. A test that slows a store for good sleeps past that work
// before it returns: it ends within 11 store timeouts of the failure, so
// a time.Sleep of a second (on the fake clock) covers the default
// StoreTimeout of 50ms.
package memory
