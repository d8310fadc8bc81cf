// Package redisstore is the Redis lock store, written once for every
// Redis client: stores/redis binds it to rueidis and stores/goredis to
// go-redis, each through a small adapter implementing [Client]. So a lock
// taken through one is seen, refused, released and waited for through the
// other: one protocol on the server, spoken by two clients, and a change
// of behaviour touches this package only.
//
// The adapters' package documentation is the users' guide; this package
// documentation is the reference for what the store does on the server
// and why.
//
// # Keys
//
// See WaitersSuffix (keys.go) for the layout: a resource's lock and its waiters' queue
// share one hash tag, the escaped name, so they are in one cluster slot;
// the fence counter of that slot is in it too (CounterKey).
//
// # Fencing
//
// AcquireFenced hands out fences that increase strictly per resource, at
// (almost) the cost of SET NX PX, with nothing left per resource once a
// lock is gone. It sends two commands in one round trip, on one
// connection, in this order (on a cluster, three):
//
//	SET lock token NX PX ttl GET take the lock (GET: the holder, if refused)
//	INCR counter                 the fence: the next value of the counter
//	PEXPIRETIME lock             on a cluster: its master's clock, in ms: expiry - ttl
//
// The counter is one key per server (FenceKey), or per hash slot on a
// cluster (CounterKey), so state is O(1) per server, however many names
// are locked. A store that has not lifted the counter (see below) for
// half of LiftAhead sends liftScript in place of INCR (and PEXPIRETIME),
// so that an acquisition is one round trip also when fences are rare.
//
// Why fences increase per resource on one server, although the commands
// are not atomic: let A hold the lock before B. A's INCR ran
// before A released (A releases only once it has its fence) or before
// A's lock expired (else A's answer came after its TTL and A's locker
// refuses the lock as past its validity: a fence is used only by a holder
// whose answer came within the TTL); A's release or expiry came before
// B's SET succeeded; and B's INCR ran after B's SET, as one connection
// runs commands in order. So B's INCR ran after A's: fence(B) > fence(A).
// A refused SET also runs its INCR, which only skips a value. Under load,
// acquisitions sent together share one INCRBY sent after all of their
// SETs, each taking one of the values it counted up (see soloAcquisitions):
// each value still comes from an increment that ran after its SET and
// before its holder had its answer, which is all the argument uses. A lock that
// A's release reserved for a woken waiter B (see ReservationPrefix) is
// taken by B's claim script in place of the SET: the same argument holds.
//
// Why fences keep increasing when the counter is lost or behind — a
// restart without persistence, a failover to a replica that had not
// received the last INCRs, a restart under the restart guard: fences are
// kept near the server's clock in microseconds. liftScript INCRs, then
// SETs the counter to TIME plus half of LiftAhead, rounded up to a
// multiple of that half, plus one (25 to 50ms ahead), if that is more,
// and answers the value and the server's clock. The store keeps that
// clock (serverNow: the lift's TIME plus the time passed since on the
// client's monotonic clock, never ahead of the server's but for the
// clocks' drift in the half of LiftAhead between lifts). When an INCR
// answers less than that reading — on a cluster, less than PEXPIRETIME -
// ttl in whole ms, times 1000, the clock of the slot's own master — the
// counter is behind the clock, and the store lifts it and takes the
// lifted value as the fence. In normal operation it never is: a store
// lifts every half of LiftAhead, and a lift puts the counter at least
// that far ahead. The rounding makes the servers of a MultiLocker, whose
// counters advance in step, lift to the same value, so their fences agree
// and a raise round is rare. So fences are never more than LiftAhead (and
// the acquisitions of a few ms) ahead of the clock of the server that
// granted them — the counter grows by one per acquisition, a million
// times slower than the clock at most — and a server that lost the
// counter, or a promoted replica behind it, is lifted to its own clock
// before its first fence: above every fence handed out before, including
// those the old master granted but never replicated, provided
//
//   - the new server's clock, at its first grant, is ahead of the old
//     server's clock at its last grant by more than LiftAhead, and that
//     much time and a round trip have passed (a store that last lifted on
//     the old server reads the old server's clock carried on): true unless
//     their clocks are skewed by about the failover time (seconds with
//     Sentinel or Cluster) less LiftAhead; a restart, with a counter
//     lost altogether or persisted without its last writes, must take
//     longer than LiftAhead;
//   - no server's clock is set back by that much between a failover or
//     restart and the previous grant; and
//   - a server hands out fewer than a million fences a second (Redis
//     cannot: a fenced acquisition and its release cost several
//     microseconds of its single thread).
//
// docs/fencing.md has the argument for users.
//
// The counter never goes down (INCR, and a lift only raises it), so a
// clock set back on a server that keeps its data changes nothing: the
// counter keeps fences increasing there. On a cluster of Redis before
// 7.0, which has no PEXPIRETIME, every fenced acquisition lifts: it sends
// liftScript in place of INCR and PEXPIRETIME, still one round trip; one
// server needs no PEXPIRETIME.
// Fences look like timestamps: microseconds since 1970, about 1.8e15
// now, far below 2^53, so they survive JSON.
//
// RaiseFence sets the counter to a fence if it is below (raise.lua), so
// that later fences of the resource's counter exceed a fence handed out
// elsewhere (a MultiLocker raises its stores to the largest fence any of
// them answered), without lifting it: the counters then agree again.
//
// The restart guard's script takes the fence itself (guarded.lua), with
// the same lift, in the one round trip it costs anyway.
//
// # Waiting
//
// See Store.WaitRelease: a caller subscribes to a shard channel of its
// own, gets in line in the lock's waiters' queue, and a release pops the
// first in line, reserves the lock for it (see ReservationPrefix) and
// publishes on that one channel. The woken process claims the
// reservation with its next acquisition of the lock, whichever of its
// callers makes it: that one sends the claim script in place of SET NX
// (see take). A caller of the process that begins to wait in between is
// not taken for the woken one: it gets in line behind those already in
// it, and leaves the reservation to that acquisition. A wake that finds
// no caller of the process waiting is handed on to the next in line, but
// an acquisition of the process that comes before the hand-on claims it
// all the same. The claim is sent once per wake (again only if no answer
// told whether it took the lock: it was not sent, or its reply was lost;
// see subscriptions.unclaim): a lock the process's
// callers do not wait for, or wait for with no wake since its last
// acquisition, is taken with SET NX, so only contended locks cost the
// script. A lock waiter also looks again now and then (firstRelook).
//
// Queued acquisitions (AcquireQueued, see queue.go) share the waiters'
// queue and the subscription: their entries carry a token, and a release
// grants them the lock instead of reserving it (grant.lua), so that the
// woken process needs no claim. Releases and the queue script wake a
// WaitRelease waiter met in line as above.
//
// # Permits
//
// AcquirePermit and the other permit methods keep a resource's permits in
// one sorted set (PermitsKey), in the resource's hash slot: tokens scored
// by their expiry on the server's clock, and the member "" scored by minus
// the limit. Each operation is one script, run after
// lua/permit_prelude.lua, which removes the expired members first, so the
// count is exact and the key holds only what is held; the key expires
// with its last permit and the last release deletes it. Fences come from
// the fence counter inside the acquisition script (with the lift), so
// they increase as lock fences do, and together with them. Waiting for a
// permit is WaitRelease's machinery (hub, line, queue) with the permit
// scripts (see waitFor): a release wakes one waiter, an expiry wakes the
// waiters through their timers.
//
// # Restart guard
//
// Guarded acquisitions run guarded.lua, which first reads a marker key,
// GuardKey, holding the server time (ms) at which the server was first
// seen by a guarded store; it never expires. If the marker is missing, the
// server has lost its data since — it restarted without persistence, was
// flushed, or is a replica promoted without it — or has just been deployed
// (it cannot tell the two apart): the script writes the marker and
// refuses. While the server time is less than the marker plus maxTTL it
// refuses; afterwards it grants as usual. A refusal is ErrRecovering
// (lock.ErrUnavailable), never lock.ErrNotAcquired. The check costs no
// round trip, works for every client and process at once and uses only
// the server's clock; it costs a GET and a TIME per acquisition, and
// acquisitions always run as a script.
//
// Limits: a brand-new server, or one flushed on purpose, grants nothing
// for maxTTL either. A restart that keeps its data but loses its last
// writes (an RDB snapshot older than the last locks, an AOF with
// appendfsync everysec losing its last second) keeps the marker too, and
// is not detected: with such persistence, delay restarts by maxTTL, or use
// appendfsync always. Setting the server's clock forward shortens the
// wait. An eviction policy that evicts keys without a TTL (allkeys-*) may
// evict the marker, which only makes the server wait again. TTLs above
// maxTTL are refused (lock.ErrInvalid), as they would outlive the guard.
package redisstore
