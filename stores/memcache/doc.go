// Package memcache is a lock store on memcached, through the gomemcache
// client (github.com/bradfitz/gomemcache/memcache).
//
// memcached is a cache, not a database: it may drop an item when it runs
// out of memory, and it forgets everything when it restarts. The store is
// correct within what memcached promises — an item is stored only if
// absent, and replaced only if unchanged since it was read — and the
// limits below say plainly what memcached does not promise.
//
// This package and gomemcache's are both named memcache. A program that
// uses both imports one under another name, for instance:
//
//	import (
//		"github.com/bradfitz/gomemcache/memcache"
//		memcachestore "github.com/lockkit/lock/stores/memcache"
//	)
//
//	client := memcache.New("10.0.0.1:11211")
//	store, err := memcachestore.New(client, memcachestore.WithPrefix("myapp:lock:"),
//		memcachestore.WithServer("10.0.0.1:11211")) // a lock and its release in two round trips
//
// # How it works
//
//   - Acquire is memcached's add, with the token as the value and the TTL
//     as the expiration: it stores the item only if the key is absent.
//   - Release is a gets (the value and the item's CAS id), a comparison of
//     the token, then a cas with a negative expiration: memcached stores
//     the item already expired, so the release is one atomic
//     compare-and-delete that fails if anyone changed the item since the
//     gets. Release never uses the unconditional delete.
//   - Extend is a gets, a comparison, then a cas with the new expiration.
//     An expired lock is never re-created; Extend never uses touch.
//   - When the cas finds the item changed but the token is still the
//     caller's (another Extend of the same lock, from another goroutine or
//     process), Release and Extend read it again and retry, for at most
//     8 rounds of gets and cas in all.
//   - With WithServer (on memcached 1.6.18 or later), Acquire and
//     AcquireFenced take the lock with a meta set in add mode that
//     returns the item's CAS id, and the Release of that lock is one meta
//     delete by that id (see Own connections below); whatever the id
//     cannot tell, Release tells by gets and cas as above.
//   - Exists is a get.
//   - AcquireFenced is Acquire's add and then, once the lock is held, an
//     incr of the store's fence counter, shared by the acquisitions that
//     draw a fence at the same moment (see Fences below); with
//     WithServer, the add and the incr go together, in one round trip.
//   - RaiseFence reads the fence counter (an incr by 0) and adds what it
//     lacks (an incr).
//
// # Capabilities
//
//   - [lock.Extender]: Extend, as above.
//   - [lock.Granular]: TTLGranularity returns one second (see below).
//   - [lock.Fencer] and [lock.FenceRaiser]: fences, under the assumptions
//     below.
//   - [lock.HolderReader]: Holder, a get: the public part of the holder's
//     token (lock.Options.Holder), never its secret.
//
// The store does not implement:
//   - [lock.TTLReader]. gomemcache cannot read an item's remaining time to
//     live (memcached's meta commands can, gomemcache does not send them).
//   - [lock.Waiter]. memcached cannot notify anyone of a release, and
//     waiting by polling would only hide the cost: the lockers sleep their
//     retry delay between attempts instead.
//
// [Store.ForceRelease] deletes a lock whoever holds it, for administrative
// tools such as lockctl release --force; applications release by token.
//
// # TTLs and granularity
//
// memcached counts expirations in whole seconds and its clock ticks once a
// second, so an item may expire up to a second before its TTL says. The
// store rounds every TTL up to whole seconds
// (a 1.5s TTL is sent as 2s, and lives between 1s and 2s) and reports a granularity of one second
// through [lock.Granular]: the lockers take that second off every lock's
// validity, and refuse a TTL too short to leave any validity (with the
// default drift allowance, anything up to about 1.012s) with an error
// matching lock.ErrInvalid. Use TTLs of several seconds.
//
// memcached reads an expiration of more than 30 days as a Unix time, not
// a duration. The store sends TTLs over 30 days as the absolute time
// now+TTL, so they mean what they say — measured against the server's
// clock, so the clock difference between client and server shifts them.
// TTLs ending after January 2038 cannot be expressed (memcached's times
// are 32-bit) and are refused with lock.ErrInvalid.
//
// # Resource names and keys
//
// Every non-empty resource name works. memcached keys are at most 250
// bytes with no spaces or control characters, so the key of a resource is
//
//   - prefix+resource, when that is a valid key and the resource does not
//     start with '#' (readable keys for ordinary names);
//   - otherwise prefix + "#" + the SHA-256 of the resource in unpadded
//     base64url (43 characters).
//
// No two resources share a key: after the prefix, hashed keys start with
// '#' and verbatim keys never do. The prefix (default "lock:", set with
// WithPrefix) may be at most MaxPrefixLen bytes, so that hashed keys fit.
//
// # Fences
//
// The store keeps one fence counter per key prefix, the item
// prefix+"#fence", which never expires — one item, not one per resource,
// so a service that locks a fresh name per request leaves nothing behind.
// A fenced acquisition takes the lock with add and then, while it holds
// the lock, draws its fence with incr. The acquisitions of a Store that
// need a fence at the same moment share one incr (a group commit): one
// that finds no incr of the store in flight sends its own; those that
// arrive while one is in flight wait for it to return, and then the first
// of them sends one "incr <counter> n" for the n waiting and hands each
// one value of the n it drew, in the order they arrived; none starts a
// goroutine, and each waits at most for the incr in flight and then its
// own. A lone fenced lock costs two requests where an unfenced one costs
// one; under load, one incr per round trip serves every acquisition
// waiting for a fence. The acquisitions of a batch then go on together,
// so a client keeping fewer idle connections than there are concurrent
// lock calls (see New) would dial all the more: with a client keeping
// gomemcache's default of two idle connections (DefaultMaxIdleConns) or
// fewer, every acquisition sends its own incr. lock.Options.NoFence skips
// the incr.
//
// A store that knows the address of the client's one server
// (WithServer) takes a fenced lock in one round trip: it sends the add
// and "incr <counter> 1" together on a connection of its own to that
// server, and memcached, which serves the requests of a connection in
// order, runs the incr once the add has taken the lock — the order the two
// round trips keep, without the wait between them. An add that is refused
// still runs its incr, which only raises the counter. If the counter is
// missing, the acquisition draws its fence as without WithServer, which
// creates the counter again. If the add took the lock but the incr's
// answer is lost, the store gives the lock back and returns the failure.
// Name the server only for a client with that one server: the lock and
// the counter must live on it. lockctl names it for every memcache://
// store.
//
// # Own connections
//
// The store's own connections (WithServer) follow the client's Timeout,
// MaxIdleConns and DialContext; each asks the server for its stats once,
// when dialed, to learn which run of the server it reached (its pid and
// start time, and a random mark that the first connection to reach a run
// adds as the item prefix+"#run", with no expiry, and every connection
// reads back: a memcached in a container is pid 1 at every start and may
// restart within a second, and a restart loses the mark) and its version. On memcached 1.6.18 or later the store's
// add is a meta set in add mode ("ms <key> <size> T<exp> ME c") that
// answers with the new item's CAS id, and the store keeps that id, with
// the run, until the lock's Release, which then deletes the item with one
// "md <key> C<id>": a lock and its release cost two round trips where the
// client's add, gets and cas cost three. CAS ids come from one counter
// per run of memcached, so within a run the id names that item and no
// other: a lock that expired and was taken again, or that an Extend
// rewrote, holds another id, the delete changes nothing, and Release
// looks again by gets and cas, by token. The id is never sent to another
// run (memcached counts CAS ids from 1 again when it restarts; a mark
// evicted or flushed makes the run look new, and its earlier locks are
// released by token), and a delete whose answer is lost and that finds
// the item gone, or another item, when sent again is reported as the
// failure, not as lock.ErrNotHeld. The store
// forgets an id at the lock's Release or Extend, or once the lock's TTL
// has passed. Every other request, and everything on an older server or
// one that does not answer stats, goes through the client or as before.
//
// Why fences increase strictly for every resource:
//
//   - While the counter lives, incr is atomic and only adds, so every
//     value an incr draws exceeds every value drawn by the incrs memcached
//     served before it, for any resource of the prefix, and each value is
//     handed to one acquisition only. An acquisition is served by an incr
//     sent after its add took the lock (it waits for the incr in flight
//     when it arrives, and takes part in the next) and answered before it
//     has its fence, so before it can release the lock. For two
//     successive holders A then B of a resource, memcached thus serves
//     A's incr before A's release, that before B's add, and that before
//     B's incr: every fence B can get is above every fence handed out
//     before, A's included. The exception — a lock whose TTL ran out
//     between its add and its incr, while the next holder drew its fence —
//     never reaches an application through the lockers: its validity,
//     counted from before the add, is gone, and they report it as not
//     acquired.
//   - The counter can be lost: memcached restarts empty, a full server
//     without -M evicts it, or a client whose server list changed finds
//     it on another server. The next incr that finds it missing (one for
//     all the acquisitions sharing it) waits the fence guard
//     (WithFenceGuard, default 100ms) and creates it again with its
//     clock's time in microseconds since 1970 (of concurrent creators, the
//     first wins). Every fence drawn before the loss was at most the clock
//     time of the client that created the lost counter plus the number
//     of fences drawn since, so the new fences are greater
//     provided that (1) the clocks of the machines that lock through the
//     server differ by less than the fence guard and are never set back
//     (NTP keeps them within milliseconds; the guard's wait is what makes
//     a loss right after a creation safe), (2) fences are drawn at fewer
//     than one per microsecond on average since the counter was created
//     (a million a second, sustained, on one counter), and (3) RaiseFence
//     is not asked for fences ahead of those clocks: a lock.MultiLocker
//     over memcached stores raises only to fences its stores drew, and
//     the Redis stores' fences are their servers' clocks in microseconds
//     (a few ms ahead), so mixing them in keeps (3) as (1) does for the
//     Redis servers' clocks; stores whose fences are larger numbers
//     (other clocks, other units) can push the counter ahead, and a later
//     loss then gives smaller fences.
//   - A server list that changes and changes back can bring an old
//     counter back, behind fences drawn meanwhile on the other server: as
//     with the locks themselves, keep the key-to-server mapping fixed
//     while locks are held (better, give each server its own store).
//
// # Contexts and timeouts
//
// gomemcache takes no context; every request is bounded by the client's
// Timeout (500ms unless set), so set it no longer than you are prepared to
// wait. A call whose context can end runs its requests in a goroutine of
// its own and returns as soon as the context ends, with an error matching
// the context's — never lock.ErrNotAcquired or lock.ErrNotHeld, as the
// request may still take effect:
//
//   - an abandoned Acquire's add goes on; a Release or Extend of the same
//     resource and token waits for it to end, so the caller's release by
//     token cannot overtake it and leave a lock nobody holds;
//   - an abandoned Release goes on, so the lock is freed once memcached
//     answers;
//   - an abandoned Extend sends no cas if it has not yet: a lock whose
//     holder stopped waiting is not kept longer.
//
// A canceled context sends nothing. A context that can never end
// (context.Background, or one from context.WithoutCancel) costs no
// goroutine switch. The goroutines that run calls whose context can end
// serve one call after another, and end after a second without one.
//
// # Guarantees and limits
//
// On one memcached server with enough memory that does not restart, a
// lock is held by at most one owner until it is released or its TTL runs
// out, and only its owner's token releases or extends it.
//
//   - Eviction: a memcached that is full evicts items to make room — a
//     held lock included, after which another owner can take it while the
//     first still believes it holds it. Run the servers that hold locks
//     with -M (return an error when memory is exhausted instead of
//     evicting), with memory to spare, or better, a memcached dedicated to
//     locks. With -M and no memory left, memcached keeps every lock it
//     holds, but Acquire, Extend and Release all fail with its
//     out-of-memory error (lock.ErrUnavailable from the lockers; a cas
//     needs memory too) until expired items make room: held locks then
//     simply run out their TTL.
//   - Restart: a memcached that restarts comes back empty: every lock it
//     held is gone, and others can take them at once. The holder finds
//     out at its next Extend or Release, which report lock.ErrNotHeld
//     (lock.Run cancels its function's context with lock.ErrLost): their
//     reads, those of Exists, Holder and RaiseFence (an incr by 0), and
//     ForceRelease's delete are sent again when they fail on a connection
//     the restart broke. An add or a cas is not (it may have taken
//     effect), so an Acquire can fail on one instead, with an error
//     (lock.ErrUnavailable from the lockers), never lock.ErrNotAcquired.
//     Until then the holder may still write: fences are what let the
//     protected resource refuse it, and they survive the restart (see
//     Fences). CAS ids also
//     start again from 1 after a restart, so in principle a cas
//     carrying an id read before the restart could match the item of a
//     new holder: it takes the restart and the new holder's add to fall
//     between one gets and its cas, and the new item to draw that very id.
//   - Stalls: memcached reads the time once a second, in its main thread.
//     When the server process stalls (stopped, swapped out, starved of
//     CPU) for longer than a second, the requests it serves as it resumes
//     can compute expirations from the stale time, and those locks expire
//     early by up to the length of the stall — more than the second the
//     lockers allow for. (Seen in tests: a lock sent with a 5s TTL just
//     before a 3s stall ended was gone about 2s later.) Keep lock servers
//     lightly loaded, and where a stall must not cost mutual exclusion use
//     a lock.MultiLocker over several servers.
//   - Server lists: a gomemcache client over several servers puts each
//     lock on one of them (by key hash); losing that server loses its
//     locks as above. To survive the loss of a server, give a
//     lock.MultiLocker one Store per server (each with its own client):
//     it holds a lock when a majority of them grant it. Its locks are
//     fenced, and the first fenced acquisition on a server whose fence
//     counter is missing (a new or restarted server) waits the fence guard
//     (100ms by default) before it is answered: with the lockers' default
//     StoreTimeout (50ms) such a store counts as failed, so a TryLock over
//     new servers reports lock.ErrUnavailable (Lock tries again, and then
//     succeeds). Give such a locker a StoreTimeout above the fence guard
//     and a round trip (lockctl uses 250ms), or lock.Options.NoFence.
//   - CAS must be enabled (memcached's default; not -C). Without it every
//     Release and Extend that finds the lock held under the caller's token
//     fails with an error saying so (one that finds the resource free or
//     held under another token still reports lock.ErrNotHeld).
package memcache
