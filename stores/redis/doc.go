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
// Every optional capability of package lock:
//   - [lock.Extender]: Extend, a compare-and-extend script.
//   - [lock.TTLReader]: TTL, with PTTL (millisecond precision).
//   - [lock.Fencer]: AcquireFenced, fences strictly increasing per
//     resource; see Fencing below.
//   - [lock.Waiter]: WaitRelease, woken by a notification that the release
//     script publishes, or by the lock's expiry; waiters do not poll.
//   - [lock.ResourceValidator]: any name of 1 to [MaxResourceLen] bytes,
//     braces, NUL and invalid UTF-8 included.
//   - [lock.Starter]: Start, so that a lock.MultiLocker over several
//     Redis masters needs no goroutine per store per call: calls started
//     by all goroutines are sent together, one batch at a time per store,
//     by a goroutine that runs only while calls are waiting.
//
// TTLs have millisecond precision and are rounded up to whole
// milliseconds, so the store reports no granularity.
//
// # Operations
//
// Every operation is one round trip, pipelined with those of other
// goroutines by rueidis: Acquire is SET NX PX; AcquireFenced, Release and
// Extend are Lua scripts run with EVALSHA, sent in full only when the
// server answers NOSCRIPT (after SCRIPT FLUSH, a restart or a failover),
// so NOSCRIPT never reaches the caller. Exists is EXISTS, TTL is PTTL,
// both sent to the master like the writes (never to a replica, which may
// lag). No operation starts a goroutine or a timer except WaitRelease, and
// Start while its queue is not empty.
//
// A lock key holding something other than a string (a value some other
// program wrote under the lock's name) is reported as a WRONGTYPE error,
// never as contention: the scripts check the key's type when they find it
// taken, and a refused SET NX is followed by a TYPE — a second round trip
// on the refusal path only.
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
// "%" and "}" percent-escaped, its fence counter under the same key
// followed by ":fence", and the queue of its waiters followed by
// ":waiters". The braces are a hash tag, so every key of a lock shares
// one cluster slot and the scripts run on one node; the escaping keeps
// distinct resources, such as "x" and "{x}", on distinct keys. A waiter's
// shard channel is the waiters' key followed by ":" and the waiter's id,
// in the same slot. MOVED and ASK redirects are followed by the client.
//
// # Fencing
//
// A lock.SingleLocker acquires fenced whenever the store can, so its locks
// carry a Fence; lock.Options.NoFence makes it use Acquire (SET NX PX)
// instead, which costs the server less than a script (docs/performance.md
// has the numbers). AcquireFenced takes the lock and increments a
// per-resource counter in one script; the counter is seeded from the server's clock in
// microseconds whenever it is missing (first use, expiry, loss). So fences
// look like timestamps (microseconds since 1970, about 1.8e15 now, far
// below 2^53, so they survive JSON), increase strictly across releases and
// expiry, and keep increasing when the counter is lost and re-seeded: the
// clock has moved on by more than the counter did, which grows by one per
// acquisition, and Redis cannot acquire and release one resource more than
// once a microsecond. That holds provided the server's clock is not set
// back.
//
// The counter is a key per resource that lives for a retention after it
// is seeded: [DefaultFenceRetention] (a day) unless [WithFenceRetention]
// says otherwise. That costs one small key (the key name plus about 100
// bytes) for each resource locked within the retention — a lot for
// millions of short-lived resource names a day, where a short retention
// is fine: re-seeding only relies on the clock not going back by more
// than the retention.
//
// Hazards, honestly: a server that restarts without persistence, or a
// failover to a replica that had not received the last writes, loses the
// locks as well as the counters. Fences then rely on the clock alone: a
// clock set back by more than the time since the counter was seeded
// would hand out a fence already used. The locks themselves are lost in
// that case anyway; see WithWaitReplicas, and Redlock over independent
// masters, for the mitigations.
//
// # Waiting for release
//
// WaitRelease subscribes (SSUBSCRIBE) to a shard channel of its own on the
// node holding the resource, then gets in line in the resource's waiters'
// queue (a list) and reads the lock's PTTL, in one script. Release pops
// the first subscription in line and publishes on its channel (SPUBLISH):
// one release wakes one waiter across every process, in the order they got
// in line, and no other process hears of it. No release after the call
// began is missed, and expiry wakes waiters through a timer armed from the
// PTTL. Waiters of one process share a subscription, which stays a moment
// after the last returns (the lockers come back after each attempt) and
// wakes them longest-waiting first. A caller that releases a resource to a
// waiter and asks for it again at once, as a loop of Lock and Unlock does,
// would beat the woken waiter to it about half the time; so the store
// that released it delays that acquisition by about a round trip (as long
// as the release took, within a millisecond of it), and the lock goes
// round in turn. Releases by versions of this package
// that published on the lock key itself are not heard: their waiters fall
// back to the lockers' retry delay. On Redis before 7, Release still works
// (the script calls SPUBLISH with pcall) and WaitRelease reports
// errors.ErrUnsupported, so the lockers sleep their retry delay instead.
//
// # Restarts
//
// A server without persistence forgets its locks when it restarts, and
// one that comes back at once can grant them again while they are still
// valid elsewhere — the one fault Redlock's majority does not absorb.
// [WithRestartGuard] makes a server that lost its data grant nothing
// until a maximum TTL has passed (the Redlock "delayed restart", enforced
// by the acquisition script with a marker key and the server's clock);
// the alternative is to keep servers down for a maximum TTL after a crash,
// or persistence with appendfsync always.
//
// # Administration
//
// [Store.ForceRelease] deletes a lock whoever holds it, and
// [Store.LastFence] reads the last fence handed out for a resource. They
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
