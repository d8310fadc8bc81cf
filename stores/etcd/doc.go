// Package etcd is a lock store on an etcd cluster, through a
// [go.etcd.io/etcd/client/v3] client. It is a module of its own, so that
// users of the other stores never download etcd's client.
//
//	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"}})
//	...
//	store, err := etcd.New(client, etcd.WithPrefix("myapp/lock/"))
//	...
//	locker, err := lock.NewSingle(store, nil)
//
// The caller owns the client: the store never closes it.
//
// # Guarantees
//
// etcd replicates every write through Raft to a majority of its members
// before it answers, so a lock survives the loss of any minority of the
// members, a leader change, and restarts: mutual exclusion holds while a
// majority of the members lives. Fences are etcd revisions, which the
// cluster makes strictly increasing for its whole life, across leader
// changes and restarts, with no counter of the store's own. This is the
// store to choose over Redis when a lock must survive a failover without
// caveats: a Redis master that fails over before replicating a lock, or
// restarts empty, forgets it, and Redlock rests on clocks and on pauses
// being shorter than the TTL. It costs more per lock — every acquisition
// and release is a Raft write, acknowledged by a majority — and needs an
// etcd cluster, typically three or five members.
//
// # Capabilities
//
//   - [lock.Extender]: Extend, which renews the lock's lease (see
//     Operations); a token waiting in line gets lock.ErrNotHeld.
//   - [lock.TTLReader]: TTL, the remaining time of the lock's lease in
//     whole seconds.
//   - [lock.HolderReader]: Holder, one linearizable read of the
//     resource's keys: the public part of the holder's token
//     (lock.Options.Holder), the head of the line (see Keys).
//   - [lock.Fencer]: AcquireFenced; the fence is the revision at which the
//     lock's key was created.
//   - [lock.Waiter]: WaitRelease, a read of the resource's keys and, if
//     one exists, a wait woken by an etcd watch on them: one watch per
//     resource and store, whatever the number of waiters, and one waiter
//     woken per release — the deletion of the resource's last key: a
//     handoff down the line is not a release.
//   - [lock.Queuer]: AcquireQueued, which waits in the resource's line,
//     as etcd's concurrency.Mutex does (see Keys and Operations): a
//     release hands the lock to the first in line by deleting its key,
//     without a write of the waiter's, and nobody who asks later can
//     take it first. A SingleLocker's Lock waits there.
//   - [lock.Granular]: TTLGranularity returns zero, as etcd never expires
//     a lease early (see TTLs).
//
// The store does not implement:
//   - [lock.Starter]. A MultiLocker over etcd stores is not a use case —
//     a single cluster already gives what a Redlock over independent
//     servers approximates — so there is nothing to pipeline: each call of
//     a MultiLocker runs in a goroutine of its own (the documented
//     fallback).
//   - Raising fences. Fences are revisions: the cluster assigns them, and
//     nothing can set the next one higher.
//   - [lock.ResourceValidator]: every non-empty name is a valid key
//     (etcd keys are arbitrary bytes). A name too long for etcd's
//     requests is refused by etcd (or by the client's gRPC limit of 2
//     MiB) before anything changes, with an error wrapping
//     lock.ErrInvalid, etcd's in its chain, which the lockers do not
//     retry: an acquisition's transaction carries the lock's key three
//     times (the two ends of the resource's range, and the put), and a
//     queued one's (a Lock's) four (the key compared, the put, and the two
//     ends of the range it reads), so with etcd's default request limit
//     of 1.5 MiB, names longer than about 500 KiB cannot be acquired, and
//     names longer than about 380 KiB cannot be locked with Lock.
//
// # Keys
//
// A lock's key is its holder's alone: the store's prefix, the resource's
// name, two NUL bytes, and the token — "lock/invoice/42\x00\x00<token>".
// A NUL byte in a name is written as NUL 0x01, so that no resource's keys
// start with another's. The resource's keys, its scope, are its line:
// the key of the lowest create revision holds the lock, and the others,
// each under a lease of its own, wait in the order of their create
// revisions. Acquire puts its key only if no key of the resource exists
// (etcd compares over the whole range of the resource's keys in the
// transaction), so nobody passes a line; AcquireQueued puts its key
// whatever the scope holds, and holds the lock once no key of a lower
// create revision is left — for good, as deleted keys never come back and
// new keys get higher revisions. A release deletes its own key without a
// condition: the deletion tells whether the token held the lock where the
// store knows the key to head its line, and otherwise a read of the head
// of the line at the same revision, in one transaction, tells. Holder,
// TTL, LastFence, Extend and ForceRelease read the head of the line. A
// key's value is the lock's TTL in whole seconds, rounded up, which TTL
// reports at most.
//
// # Operations
//
// Each lock has a lease of its own while it is held: a lock's TTL is its
// own, and an Extend renews that lock only. A lease shared by the locks of
// a process, as etcd's concurrency.Mutex uses, saves writes but ties every
// lock to the process's keepalive instead of its own TTL. Granting and
// revoking a lease per lock costs two Raft writes, so the store reuses
// leases instead: a released lock's lease, which no key is attached to any
// more, is kept by the store and taken by its next acquisition of the same
// TTL, which renews it. A lease lasts longer than its lock's TTL, rounded
// up to whole seconds, by a tenth of that, rounded down (its slack: a
// second for a TTL over 9s and up to 19s, none up to 9s), so that the
// locks taken within that much of the lease's grant or last renewal need
// no renewal: a lease serves many short locks in a row for one renewal.
// The store picks each lease's ID itself, at random, and calls etcd's
// lease API without the client's automatic resending, so an answer lost
// after the request was sent is reported as an error, never taken for an
// outcome.
//
//   - Acquire: a transaction that puts the lock's key under the lease if
//     the resource has no key — one Raft write — with, sent along with it, a
//     keepalive that renews a kept lease (answered by the leader, without
//     a Raft write): one round trip. The lock is taken only if both
//     succeed; its TTL counts from the renewal. A kept lease that etcd
//     keeps a whole TTL from the acquisition's start anyway is not renewed:
//     the store knows a time before which etcd does not expire each lease
//     (the start of the call that granted or last renewed it, plus its
//     TTL), and a lease's slack, or a TTL that is not whole seconds,
//     leaves that much to spare (a lease of 11s renewed for a lock of 10s
//     serves other locks of 10s for a second without a renewal, and a
//     lease of 2s renewed for a lock of 1.5s for half a second). With no
//     kept lease of the TTL, a lease is
//     granted first (a Raft write, a round trip). When the key exists,
//     the lease is kept again. While callers of the store wait for the
//     resource and its watch last saw a key in its scope, the resource is
//     read first, and a held resource costs that read only.
//   - AcquireQueued (with a wait): a transaction that puts the lock's key
//     under its lease whatever the resource's keys, and reads the key
//     before it in the line — one Raft write, as Acquire, and the lock if
//     there is none. Otherwise the call waits, woken by the store's watch
//     of the resource when the key before it is deleted, and then reads
//     the line, with a renewal of its lease sent along: a handoff costs
//     the release's deletion, one read and one keepalive, as a
//     concurrency.Mutex's does, and no waiter races another for the lock.
//     While it waits, its lease is renewed every third of the lease. A wait
//     that runs out deletes the key, in a transaction that leaves it if
//     it holds the lock by then; a call whose context ends deletes it.
//     A key waits under a lease of 15s at most (or the cluster's shortest
//     lease, if longer), so that a waiter whose process dies, or is cut
//     off from the cluster, holds up the line, once its turn comes, only
//     until that lease expires: with a longer lease (TTL and slack) the
//     call first tries as Acquire does, waits under a lease of 15s, and
//     when handed the lock moves its key to a lease of its TTL — a
//     transaction more per handoff (with a keepalive or a grant of that
//     lease), which keeps the key's create revision (its place and its
//     fence); a handoff so costs more than a concurrency.Mutex's.
//   - Release: one deletion of the lock's key — one Raft write, and
//     cheaper for etcd than a transaction, which reads before it writes —
//     when the store knows the key to head its line (it took the lock,
//     was handed it, or moved it to a new lease in an Extend): a head
//     holds the lock until its key goes. Otherwise (a lock taken through another store, a key waiting
//     in line) one transaction reads the head of the line and deletes the
//     key, still one Raft write; a key that waits in line is taken out of
//     it, and the answer is lock.ErrNotHeld.
//     The lease the key was attached to is kept, or revoked if the store
//     already keeps WithIdleLeases of them or did not lend it (a lock
//     taken through another store, whose lease the deletion reports).
//   - Extend: read the head of the line, and if it is the lock's key
//     renew its lease (a keepalive, answered by the leader without a Raft
//     write). Extending with another TTL than the lease's moves the lock
//     to a new lease in a transaction that checks the old lease.
//   - Exists: a count-only read. TTL: a read and a lease query.
//
// Renewals go over LeaseKeepAlive streams that the store keeps open
// between them (up to 64), one renewal at a time on each, rather than
// over a stream opened per renewal (as the client's KeepAliveOnce does),
// whose setup costs both sides more than the renewal. One at a time, as a
// member answers the renewals of a stream in order, and a follower
// forwards each to the leader: renewals sharing a stream would queue. A
// renewal whose stream breaks, or whose context ends, before its answer
// arrives returns an error, never an outcome, and its stream is closed;
// the next renewal opens another. The streams end with the client, or
// with Close.
//
// A lease is kept only when the store knows that no key is attached to it
// — the deletion of its key reported it, or the transaction that would
// have attached one did not — and an acquisition takes it alone, so no
// two keys are ever attached to one lease; a key waiting in line is
// attached to its lease as a held lock's is. A lease whose key is in an
// unknown state (a call failed after it was sent) is never kept.
//
// Nothing is left per resource after a release or an expiry: the key is
// deleted, or goes with its lease; a key that waited in line is deleted
// when its call leaves the line, or goes with its lease, which nobody
// renews once its call has returned. The leases the store keeps belong to
// the store, not to a resource: at most WithIdleLeases of them (64 by
// default), with no key attached, each expiring by itself one TTL after
// the lock that last used it was taken or extended. Close revokes them.
// A lease granted for an acquisition whose answer was lost is revoked or
// expires on its own.
//
// # TTLs
//
// Leases count whole seconds: TTLs are rounded up to whole seconds, so a
// lock may outlive its TTL by up to a second, plus its lease's slack (a
// tenth of the TTL in whole seconds, rounded down: a second for a TTL
// over 9s and up to 19s), plus the half second in which the leader
// notices expired leases (WithoutLeaseSlack drops the slack, at the cost
// of a renewal for every acquisition of a whole-second TTL that takes a
// kept lease). A lease never expires
// early:
// the leader counts its TTL from the moment it grants or renews it, after
// the caller's clock started, and a new leader extends every lease by an
// election timeout. So the lockers need take no granularity off a lock's
// validity.
//
// etcd grants no lease shorter than 1.5 election timeouts, rounded up to
// whole seconds (2s with the default one-second election timeout), and
// silently lengthens a shorter one. The store refuses a TTL that, rounded
// up to whole seconds, is below its minimum (DefaultMinTTL, or
// WithMinTTL) with lock.ErrInvalid before sending anything (with the
// default minimum of 2s, a TTL of 1.5s is taken, for a lease of 2s); if
// the cluster still grants a longer lease than asked, the store revokes
// it, refuses the TTL, and raises its minimum.
// At the other end, a lock's lease, slack included, may not exceed etcd's
// longest (clientv3.MaxLeaseTTL seconds, about 285 years): a longer TTL is
// refused with lock.ErrInvalid too, before anything is sent.
//
// # Ambiguous outcomes
//
// A call that fails after its request was sent — a timeout, a leader
// change during the call ("leader changed"), a connection lost — returns
// an error, never lock.ErrNotAcquired or lock.ErrNotHeld: the request may
// have taken effect. The lockers then release by token, which deletes the
// key if it holds the token. Errors caused by the caller's context
// match context.Canceled or context.DeadlineExceeded.
//
// A leader that dies loses the writes it was replicating, and etcd answers
// them only when its own request timeout runs out (5s plus two election
// timeouts), where a new leader is elected in about two election timeouts.
// Bound the calls with WithTimeout (or the caller's contexts) so that a
// locker gives up on such a call, cleans up and tries again sooner.
package etcd
