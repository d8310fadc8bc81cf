// Package goredis is a lock store on Redis through a
// [github.com/redis/go-redis/v9] client: a single server, a
// Sentinel-managed master (a failover client), or a Redis Cluster,
// unchanged. It is a module of its own, so that users of the rueidis
// store (package redis) never download go-redis.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	...
//	store, err := goredis.New(client, goredis.WithPrefix("myapp:lock:"))
//	...
//	locker, err := lock.NewSingle(store, nil)
//
// For Redlock, make one Store per independent master and pass them all to
// lock.NewMulti.
//
// The caller owns the client: the store never closes it. The store speaks
// the rueidis store's protocol on the server — the same keys, Lua scripts,
// fence counters and waiters' queues — so the two kinds of store, on the
// same server and prefix, share locks: one refuses what the other holds,
// releases what the other took under the same token, and wakes the other's
// waiters. Wait-for-release needs Redis 7.
//
// # Capabilities
//
// Every optional capability of package lock but one:
//   - [lock.Extender]: Extend, a compare-and-extend script.
//   - [lock.TTLReader]: TTL, with PTTL (millisecond precision).
//   - [lock.Fencer]: AcquireFenced, fences strictly increasing per
//     resource, from the counter the rueidis store uses; see Fencing in
//     that package's documentation, which holds here word for word.
//   - [lock.Waiter]: WaitRelease, woken by a notification that the release
//     script publishes, or by the lock's expiry; waiters do not poll.
//   - [lock.ResourceValidator]: any name of 1 to [MaxResourceLen] bytes,
//     braces, NUL and invalid UTF-8 included.
//
// What differs from the rueidis store:
//   - No [lock.Starter]: go-redis does not pipeline the commands of
//     concurrent callers, so there is nothing to batch. A lock.MultiLocker
//     over several of these stores runs each store call in a goroutine of
//     its own instead (the documented fallback).
//   - No head start for a waiter woken by a release: the rueidis store
//     delays its own next acquisition of a resource it just released to a
//     waiter by about a round trip, so that a loop of Lock and Unlock
//     takes turns with the waiters; this store does not, so such a loop
//     may win the lock back before the woken waiter asks for it (the
//     waiter then gets in line again).
//   - No administrative operations (ForceRelease, LastFence): lockctl uses
//     the rueidis store, which sees the locks of this one.
//   - A *redis.Ring is refused (New says why).
//
// TTLs have millisecond precision and are rounded up to whole
// milliseconds, so the store reports no granularity.
//
// # Operations
//
// Every operation is one round trip: Acquire is SET NX PX; AcquireFenced,
// Release and Extend are Lua scripts run with EVALSHA, sent in full only
// when the server answers NOSCRIPT (after SCRIPT FLUSH, a restart or a
// failover), so NOSCRIPT never reaches the caller. Exists is EXISTS, TTL is
// PTTL, both sent to the master like the writes, never to a replica, which
// may lag: a cluster client made with ReadOnly, RouteByLatency or
// RouteRandomly would send them to replicas, so the store then sends its
// reads through the client of the slot's master (a redirect is then an
// error, not followed).
//
// A lock key holding something other than a string (a value some other
// program wrote under the lock's name) is reported as a WRONGTYPE error,
// never as contention: the scripts check the key's type when they find it
// taken, and a refused SET NX is followed by a GET, which fails on such a
// key — a second round trip on the refusal path only.
//
// # Retries and ambiguous outcomes
//
// go-redis retries commands on its own (Options.MaxRetries) after a read
// timeout or a connection lost after the command was written — when the
// command may well have run. A retried SET NX would then find the lock
// taken by its own first attempt and report lock.ErrNotAcquired for a
// lock the caller holds. The store cannot change the caller's client, so
// it sends every command marked as not to be retried (go-redis'
// Cmder.NoRetry; this module requires v9.22.0, which honours it): it
// makes one attempt per call, and an outcome it cannot be sure of — a
// timeout or a broken connection after a command was sent, a context that
// ended — is returned as an error, never as lock.ErrNotAcquired or
// lock.ErrNotHeld; the lockers then release by token.
//
// Should the client send a command twice all the same (a version that
// ignores the mark, a cluster ASK redirect), the store notices — the token
// argument counts how many times the client wrote it — and an acquisition
// that finds the lock held under its own token reports it acquired, with
// the fence its earlier send got, while a release that finds nothing to
// release reports an error (the first send may have released it), not
// lock.ErrNotHeld. Extend needs nothing: extending twice is extending.
//
// # Contexts
//
// go-redis bounds a command by its context's deadline only if the client
// was made with ContextTimeoutEnabled: true, and otherwise by its
// ReadTimeout and WriteTimeout alone (3s by default). The lockers rely on
// store calls ending by their context's deadline (lock.MultiLocker's
// per-store timeout, the validity of a Redlock lock), so for a client
// without ContextTimeoutEnabled, or a context without a deadline that can
// be canceled, the store runs each command in a goroutine and stops
// waiting when the context ends, reporting the context's error (the
// command's outcome is then unknown); the goroutine ends when the client
// gives up on the command. Make clients with ContextTimeoutEnabled: true,
// and give contexts deadlines, to spare that goroutine.
//
// # Keys and Redis Cluster
//
// The key layout is the rueidis store's (see package redis): a resource r
// is stored under prefix + "{" + e + "}", where e is r with "%" and "}"
// percent-escaped, its fence counter under the same key followed by
// ":fence", and the queue of its waiters followed by ":waiters". The
// braces are a hash tag, so every key of a lock shares one cluster slot
// and the scripts run on one node. MOVED and ASK redirects are followed by
// the client.
//
// # Waiting for release
//
// WaitRelease subscribes (SSUBSCRIBE) to a shard channel of its own on the
// node holding the resource, then gets in line in the resource's waiters'
// queue and reads the lock's PTTL, in one script. Release — this store's
// or the rueidis store's — pops the first subscription in line and
// publishes on its channel (SPUBLISH): one release wakes one waiter across
// every process and both kinds of store, in the order they got in line. No
// release after the call began is missed, and expiry wakes waiters through
// a timer armed from the PTTL. Waiters of one process on one client share
// a subscription, which stays a moment after the last returns. go-redis
// gives each subscription a connection of its own, so a process holds one
// connection per resource it is waiting for.
//
// # Restarts and replication
//
// [WithRestartGuard] and [WithWaitReplicas] are the rueidis store's, on
// the same marker key and with the same errors ([ErrRecovering],
// [ErrNotReplicated], both wrapping lock.ErrUnavailable); see that
// package for when to use them.
package goredis
