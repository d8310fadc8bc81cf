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
// The caller owns the client: the store never closes it. The store is the
// rueidis store's (package redis) — one implementation, shared — bound to
// go-redis: the same keys, commands, scripts, fence counters and waiters'
// queues, so the two kinds of store, on the same server and prefix, share
// locks: one refuses what the other holds, releases what the other took
// under the same token, and wakes the other's waiters. Wait-for-release
// needs Redis 7.
//
// # Capabilities
//
// Every capability of the rueidis store, documented there (operations,
// fencing, keys and Redis Cluster, waiting, restarts, replication hold
// here word for word): lock.Extender, lock.TTLReader, lock.HolderReader,
// lock.Fencer and lock.FenceRaiser, lock.Waiter, lock.Queuer (a waiting
// Lock is handed the lock by the release), lock.Permitter and
// lock.PermitWaiter (semaphores and read-write locks natively),
// lock.ResourceValidator, lock.Starter (calls started together go out as
// one pipeline), the handoff of a released lock to the waiter it wakes, and the
// administrative ForceRelease and LastFence. What go-redis makes
// different:
//   - A pipeline, and each command, holds a connection of the client's
//     pool while it waits for its answer (go-redis does not multiplex
//     callers on a connection), so size PoolSize for the callers in
//     flight; calls started with Start, and acquisitions under load on one
//     server (more than four under way in the store), share one pipeline
//     per batch.
//   - A waiting subscription holds a connection of its own: a process
//     holds one connection per resource it is waiting for.
//   - With a cluster client that reads from replicas (ReadOnly,
//     RouteByLatency, RouteRandomly), the store sends its commands,
//     pipelines and subscriptions through the client of the slot's master
//     (a redirect is then an error, not followed), one slot after another
//     in a batch.
//   - WithWaitReplicas' WAIT goes in the acquisition's pipeline, whose
//     replies go-redis reads under the client's ReadTimeout: keep it above
//     the WAIT timeout, or an acquisition that waits for slow replicas
//     fails with ErrNotReplicated at the ReadTimeout, its connection
//     closed, rather than at the WAIT timeout.
//   - A *redis.Ring is refused (New says why), and so is a type of the
//     caller's that embeds one; a type that embeds a *redis.Client or a
//     *redis.ClusterClient is taken for the client it embeds (a nil one
//     is refused). The kind of client is told by its Options method: any
//     other implementation of redis.UniversalClient, a type that embeds
//     the interface included, is taken for a client of one server, and
//     does not work fronting a cluster (releases fail with CROSSSLOT
//     errors) unless it has an Options method returning the cluster
//     client's options (see New).
//   - Locks are taken with SET NX PX without GET: go-redis handles a nil
//     reply, which SET NX PX GET gives for every lock taken, as an error
//     it examines at some cost (about twenty allocations) to decide
//     whether to retry. A refusal is read with a GET afterwards, one
//     more round trip on the refusal path only.
//
// TTLs have millisecond precision and are rounded up to whole
// milliseconds, so the store reports no granularity.
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
// that finds the lock held under its own token reports it acquired (a
// fenced one with the fence of the last send, taken while the lock was
// held), while a release that finds nothing to release reports an error
// (the first send may have released it), not lock.ErrNotHeld. Extend needs
// nothing: extending twice is extending.
//
// # Contexts
//
// go-redis bounds a command by its context's deadline only if the client
// was made with ContextTimeoutEnabled: true (and sets socket deadlines: a
// ReadTimeout or WriteTimeout of -2 turns them off, the context's
// deadline included), and otherwise by its ReadTimeout and WriteTimeout
// alone (5s by default). The lockers rely on store calls ending by their
// context's deadline (lock.MultiLocker's per-store timeout, the validity
// of a Redlock lock), so for a client without ContextTimeoutEnabled (or
// with a timeout of -2), or a context without a deadline that can
// be canceled, the store runs each command in a goroutine and stops
// waiting when the context ends, reporting the context's error (the
// command's outcome is then unknown); the goroutine ends when the client
// gives up on the command. Make clients with ContextTimeoutEnabled: true,
// and give contexts deadlines, to spare that goroutine; a command so
// bounded ends with its answer or at its deadline (or ReadTimeout), not
// when its context is canceled before.
//
// # Canceled calls
//
// go-redis sends each caller's commands on a connection of its own, so a
// command sent later can reach the server first. A call that stops waiting
// for its command when its context ends (see Contexts: not a command the
// client bounds by its deadline) returns at once while go-redis still
// sends the command; so does a call started with Start (and an
// acquisition under load, which goes out the same way) whose context ends
// before its batch is answered, whatever the client. The store keeps
// order on each lock all the same: a release waits for every command of
// the store on the same lock still on its way, and any other command for
// those whose call stopped waiting for them as Contexts says, so that a
// release cleaning up after an abandoned acquisition never overtakes it
// on another connection of the pool. A release whose own context ends
// while it waits returns the context's error (its outcome unknown) and is
// still sent, in the background, once those commands have finished: the
// lock an abandoned acquisition may take is not left held until its TTL
// runs out.
package goredis
