// Package redis is a lock store on Redis, through a
// [github.com/redis/rueidis] client: a single server, a Sentinel-managed
// master, or a Redis Cluster, unchanged.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	...
//	store, err := redis.New(client, redis.WithPrefix("myapp:lock:"))
//	...
//	locker, err := lock.NewSingle(store, nil)
//
// For Redlock, make one Store per independent master and pass them all to
// lock.NewMulti.
//
// The caller owns the client: the store never closes it. Requires Redis 6
// or later (rueidis speaks RESP3); wait-for-release needs Redis 7.
//
// # Capabilities
//
// Every optional capability of package lock but Granular, which it has no
// use for (TTLs are exact to the millisecond, below):
//   - [lock.Extender]: Extend, a compare-and-extend script.
//   - [lock.TTLReader]: TTL, with PTTL (millisecond precision).
//   - [lock.HolderReader]: Holder, with GET: the public part of the
//     holder's token (lock.Options.Holder), never its secret.
//   - [lock.Fencer] and [lock.FenceRaiser]: AcquireFenced, fences strictly
//     increasing per resource, and RaiseFence; see Fencing below.
//   - [lock.Waiter]: WaitRelease, woken by a notification that the release
//     script publishes, or by the lock's expiry; waiters do not poll, but
//     look again now and then (50ms, doubling to every second) in case
//     the lock was set to expire sooner.
//   - [lock.Queuer]: AcquireQueued, which a lock.SingleLocker's Lock
//     waits with: an acquisition that finds the lock held gets in line on
//     the server, and the release script hands it the lock — sets the lock
//     to its token, takes its fence and publishes both to its process — so
//     the waiter holds the lock when it hears of it, and waiters are served
//     in the order they got in line, across processes. Not with the
//     restart guard or WithWaitReplicas (errors.ErrUnsupported: the
//     lockers then wait with WaitRelease). See Waiting below.
//   - [lock.Permitter] and [lock.PermitWaiter]: counted permits for
//     lock.NewSemaphore and lock.NewRWLocker, natively: a free permit is
//     one script, one round trip, whatever the limit; each permit has its
//     own token and fence (from the locks' counter); the server keeps one
//     sorted set per resource with permits held, and nothing once they are
//     released or expired; WaitPermit is woken as WaitRelease is, one
//     waiter per freed permit. See Permits below.
//   - [lock.ResourceValidator]: any name of 1 to [MaxResourceLen] bytes,
//     braces, NUL and invalid UTF-8 included.
//   - [lock.Starter]: Start, so that a lock.MultiLocker over several
//     Redis masters needs no goroutine per store per call: calls started
//     by all goroutines are sent together, one batch at a time per store,
//     by a goroutine that runs only while calls are waiting; each call is
//     answered by its own context's deadline.
//
// TTLs have millisecond precision and are rounded up to whole
// milliseconds, so the store reports no granularity.
//
// # Operations
//
// Every operation is one round trip, pipelined with those of other
// goroutines by rueidis: Acquire is SET NX PX GET (the GET tells a
// refusal's holder); AcquireFenced is that and INCR (on a cluster also
// PEXPIRETIME) sent together (see Fencing); Release and Extend are
// Lua scripts run with EVALSHA, sent in full only when the server answers
// NOSCRIPT (after SCRIPT FLUSH, a restart or a failover), so NOSCRIPT
// never reaches the caller. Exists is TYPE (which costs what EXISTS
// does, and tells a lock from a key of another type), TTL is PTTL after a
// TYPE, in one script; both are sent to the master like the writes (never
// to a replica, which may lag). Under load — more than four acquisitions of the store under way
// at once, on one server, without the restart guard or WithWaitReplicas —
// further Acquire and AcquireFenced calls wait for the store's batch on
// the wire and go out together in the next, as calls started with Start
// do. No operation starts a goroutine or a timer except the waits
// (WaitRelease, WaitPermit and AcquireQueued), Start and those batched
// acquisitions while the store's queue is not empty, an acquisition
// yielding its head start to a woken waiter (a timer; see Waiting for
// release) and the release of a lock WithWaitReplicas could not confirm
// (a timer bounding it).
//
// A lock key holding something other than a string (a value some other
// program wrote under the lock's name) is reported as a WRONGTYPE error,
// never as contention: SET NX PX GET and the scripts' GET answer WRONGTYPE
// themselves; Exists, TTL and WaitRelease read the key's TYPE (PTTL and
// EXISTS would report it a lock held); on Redis before 7.0, which has no
// SET with both NX and GET, a refused SET NX is followed by a GET — a
// second round trip on the refusal path only.
//
// Cancellation: rueidis serves a command on an idle connection
// synchronously when the command's context has a deadline, and then
// honours only the deadline (bounded by ClientOption.ConnWriteTimeout, ten
// seconds by default), not an earlier cancellation; the handshake of a new
// connection too. For calls that return as soon as their context is
// canceled, create the client with AlwaysPipelining: rueidis then queues
// every command, returns when the context ends, discards the late reply
// and keeps the connection. (The lockers' own calls carry deadlines: the
// store timeout of lock.MultiLocker, the caller's context.)
//
// The store makes one attempt per call: the client retries none of its
// commands (it would retry reads on its own). An outcome it cannot be sure
// of — a timeout or a broken connection after a command was sent, a
// canceled context — is returned as an error, never as
// lock.ErrNotAcquired or lock.ErrNotHeld: the lockers then release by
// token.
//
// # Keys and Redis Cluster
//
// A resource r is stored under prefix + "{" + e + "}", where e is r with
// "%" and "}" percent-escaped, and the queue of its waiters under the same
// key followed by ":waiters". The braces are a hash tag, so every key of a
// lock shares one cluster slot and the scripts run on one node; the
// escaping keeps distinct resources, such as "x" and "{x}", on distinct
// keys. A waiter's shard channel is the waiters' key followed by ":" and
// the waiter's id, in the same slot. The fence counter is [FenceKey], one
// per server, or on a cluster one per hash slot (FenceKey + ":{t}", with t
// a tag of the slot). MOVED and ASK redirects are followed by the client.
// Waiting subscriptions are on the master of their slot, where a release
// looks for a queued acquisition's: with a client that sends read-only
// commands to replicas (ClientOption.SendToReplicas; rueidis counts
// SSUBSCRIBE among them), the store finds its first subscription on a
// replica (PUBSUB SHARDNUMSUB on the master says so), makes it again, and
// every later one, through a dedicated connection to the slot's master:
// one connection per resource the process waits for.
//
// # Fencing
//
// A lock.SingleLocker acquires fenced whenever the store can, so its locks
// carry a Fence; lock.Options.NoFence makes it use Acquire (SET NX PX)
// alone. AcquireFenced sends SET NX PX and INCR of the server's (or
// slot's) fence counter (on a cluster also PEXPIRETIME of the lock),
// together on one connection: one round trip, no script (but for the lift
// below), and no key per resource — nothing of a resource stays once its
// lock is released or expires. Fences increase strictly per resource,
// across releases and expiry, because one connection runs the commands
// in order and a holder releases only once it has its fence. The fenced acquisitions of one
// batch (see Operations) share one INCRBY sent after all of their SETs,
// each taking one of the values it counted, which keeps that argument.
//
// Fences are kept near the server's clock in microseconds: a fenced
// acquisition that comes 25ms or more after the store's last lift sends a
// script in place of INCR, in the same round trip, that lifts the counter
// 25 to 50ms ahead of the clock and tells the store the server's clock;
// when the counter is behind that clock (on a cluster, PEXPIRETIME tells
// the clock of the lock's master), a second round trip lifts it. So
// fences look like timestamps (about 1.8e15 now, far below 2^53: they
// survive JSON), and they keep increasing when the counter is lost or
// behind: after a restart without persistence, after a failover to a replica that had not received the
// last increments, after a restart under WithRestartGuard. That holds
// provided the new server's clock is not behind the old one's by about
// the failover time less 50ms (seconds with Sentinel or Cluster) and no
// clock is set back by that much; a clock set back on a server that keeps
// its data is harmless, as the counter never goes down. A RaiseFence
// ahead of the server's clock voids the first point until the clock
// passes the raised value: the counter a restart loses was above the
// clock by more than a lift gives back. docs/fencing.md argues both
// points in full. On a cluster of Redis before 7.0 (no
// PEXPIRETIME) every fenced acquisition sends that script in place of
// INCR and PEXPIRETIME: still one round trip.
//
// Upgrading from v0.1, whose fences came from a counter per resource:
// upgrade every process of a server at once, as fences handed out by the
// two versions side by side do not order.
//
// # Waiting for release
//
// A lock.SingleLocker's Lock waits with AcquireQueued (lock.Queuer): its
// first attempt is SET NX as for TryLock — or, while a caller of the
// process waited for the lock lately (its subscription is still there),
// getting in line at once — and one that finds the lock held subscribes
// as WaitRelease does and gets in line in the same waiters' queue, with
// its token, TTL and whether it takes a fence, in one round trip: RPUSH,
// PEXPIRE, SET NX PX GET and PTTL, whose SET takes a free lock (through
// go-redis, the queue script, which takes it if nobody is ahead in line).
// A release then grants the lock to the first such entry: it sets the
// lock to the entry's token for its TTL, takes its fence from the counter
// (lifted to the server's clock when behind it) and publishes both on the
// entry's channel, so the waiting call returns holding the lock, without a round
// trip of its own, and no caller that asks later — the releaser asking
// again at once included — can take it first: callers are served in the
// order they got in line, across processes. An entry whose subscription
// has no listener on the server (its process is gone, or a failover left
// the subscription on a replica) is skipped; a grant whose caller gave up
// as it came is released by its process, which hands the lock on; a lock
// that expires goes to the first in line when its waiters look again (at
// its expiry, and 50ms, doubling to every second), unless another
// caller's SET NX finds it free first. A wait that ends
// without the lock takes its entry out of line. Under the restart guard
// and WithWaitReplicas, AcquireQueued reports errors.ErrUnsupported and
// Lock waits with WaitRelease, below.
//
// WaitRelease subscribes (SSUBSCRIBE) to a shard channel of its own on the
// node holding the resource, then gets in line in the resource's waiters'
// queue (a list) and reads the lock's PTTL, in one script. Release pops
// the first subscription in line and publishes on its channel (SPUBLISH):
// one release wakes one waiter across every process, in the order they got
// in line, and no other process hears of it. No release after the call
// began is missed, and expiry wakes waiters through a timer armed from the
// PTTL — and, since nothing tells a waiter that the lock was extended for
// less or taken again for less, it looks again 50ms after getting in line,
// then after twice as long each time, up to every second, keeping its
// place in line (so a key without a TTL at the lock's name, set by another
// client, is seen to be deleted). Waiters of one process share a subscription, which stays a moment
// after the last returns (the lockers come back after each attempt) and
// wakes them longest-waiting first. A release that wakes a waiter hands
// it the lock: it sets the lock to a reservation for the woken
// subscription (lockkit:handoff: and its id, for 100ms), which every
// other caller's SET NX finds taken — the releaser's too, when it asks
// again at once, as a loop of Lock and Unlock does — and which only the
// woken process's acquisition takes (a script that treats its own
// reservation as free). So the lock goes round in the order the waiters
// got in line, across processes. Until it is taken, Exists reports the
// lock held and Holder reports "", true; a reservation nobody takes (the
// woken process died, or its caller gave up) lapses after its 100ms, and
// one whose subscription has no caller left is handed on to the next in
// line at once. Under the restart guard or WithWaitReplicas, releases
// delete the lock as before, and the store that released delays its own
// next acquisition of it by about a round trip instead, so that the woken
// waiter gets there first; the calls of a lock.MultiLocker (Start) do
// neither. A woken waiter that finds the lock taken all the same
// (its reservation lapsed, or nothing reserved it) gets back in line at the
// front, not the end, so it keeps its turn. A waiter of a version of
// this package that does not claim reservations gets a lock reserved for
// it only once the reservation lapses: upgrade the processes of a server
// together. Releases by versions of this package
// that published on the lock key itself are not heard: their waiters fall
// back to the lockers' retry delay. On Redis before 7, Release still works
// (the script calls SPUBLISH with pcall) and WaitRelease reports
// errors.ErrUnsupported, so the lockers sleep their retry delay instead.
//
// # Permits
//
// A resource's permits (lock.NewSemaphore, lock.NewRWLocker) live in one
// sorted set, prefix + "{name}:permits", beside the resource's lock in its
// hash slot but apart from it: a permit on "r" and a lock on "r" do not
// exclude each other. Its members are the holders' tokens scored by their
// expiry (server time, ms), and "" scored by minus the limit they were
// taken under. AcquirePermit is one script: it drops the expired members,
// refuses with lock.ErrNotAcquired if limit permits are held, with an
// error matching lock.ErrLimitMismatch if they were taken under another
// limit (changing nothing either way), and otherwise adds the token and
// takes a fence from the fence counter, as AcquireFenced does. The key
// expires with its last permit, and the release of the last permit
// deletes it. ReleasePermit wakes the first caller waiting in
// WaitPermit, as Release does for WaitRelease (the permits' waiters'
// queue is prefix + "{name}:permits:waiters"), and a permit's expiry
// wakes them through a timer. The restart guard and WithWaitReplicas
// apply to permits as to locks.
//
// # Restarts
//
// A server without persistence forgets its locks when it restarts, and
// one that comes back at once can grant them again while they are still
// valid elsewhere — the one fault Redlock's majority does not absorb.
// [WithRestartGuard] makes a server that lost its data grant nothing
// until a maximum TTL has passed (the Redlock "delayed restart", enforced
// by the acquisition script with a marker key and the server's clock), and
// refuses TTLs above that maximum. maxTTL must be at least the longest TTL
// any client of the server uses, and every client that takes locks on the
// server must use the guard; a refusal is an error matching ErrRecovering
// (and lock.ErrUnavailable). The guard is for independent masters: New
// refuses it on a cluster and with WithWaitReplicas. How it works, and its
// limits (persistence that loses its last writes, eviction, clocks), are
// in the documentation of the shared store, internal/redisstore; the
// alternative is to keep servers down for a maximum TTL after a crash, or
// persistence with appendfsync always.
//
// # Administration
//
// ForceRelease frees a lock whoever holds it (granting it to a queued
// acquisition first in line), and LastFence reads the fence counter of a
// resource, which it shares with the others of its server or cluster slot:
// no fence handed out for it so far is greater, and every fenced
// acquisition of any of them moves it on — a refused one too, unless it
// was refused under WithRestartGuard or was a permit's (those scripts
// draw a fence only for a lock they grant). They
// serve administrative tools such as lockctl (its release --force and
// status commands), not applications.
//
// # Replication
//
// Redis replicates asynchronously: a master can grant a lock and fail
// before its replicas receive it, and the promoted replica grants it
// again. [WithWaitReplicas] makes each acquisition wait until n replicas
// have it (WAIT), and release it and fail with [ErrNotReplicated]
// otherwise. Redlock over several independent masters (lock.NewMulti)
// tolerates the loss of a minority of them instead.
package redis
