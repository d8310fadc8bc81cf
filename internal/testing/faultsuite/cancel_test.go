package faultsuite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/memory"
)

// cancelAfter is when the caller gives up in the cancellation scenarios.
const cancelAfter = 20 * time.Millisecond

// stage is a point at which a call is canceled: setup makes the call
// block there, heal undoes it.
type stage struct {
	name        string
	setup, heal func()
	call        func(ctx context.Context) error
	// leaves is the number of lock keys the stage may leave once healed:
	// the lock held by another client, or by the caller (an Extend or an
	// Unlock that gave up does not free the caller's lock).
	leaves int
}

// Context cancellation at each stage of a call, on real servers: while
// the servers do not answer, while replies are lost, while waiting to
// retry a held lock, during an Extend and during an Unlock. Every call
// returns promptly with the context's error — never ErrNotAcquired — and
// once the fault is healed no lock of a canceled acquisition is left. The
// bound asserted here only catches hangs (the machine is shared); the
// report gives the measured times, and TestCancellationExact proves the
// tight bound on fake time.
//
// Redis clients: rueidis serves a command on an idle connection
// synchronously when its context has a deadline, and then honours only
// the deadline (bounded by ClientOption.ConnWriteTimeout), not a
// cancellation; with AlwaysPipelining it queues every command and returns
// as soon as the context ends. The scenario runs the Redis backends with
// AlwaysPipelining and one connection per client (PipelineMultiplex -1,
// so no connection is dialed during the stall: a connection's handshake
// also honours only deadlines), and once with rueidis's defaults, where
// a canceled call waits for the context's deadline or the write timeout
// (2s here, 10s by default): docs/reliability.md reports both.
func TestCancellation(t *testing.T) {
	for _, name := range []string{"redis", "redlock-3", "memcache", "redis-default-client"} {
		t.Run(name, func(t *testing.T) {
			s := begin(t, "cancellation", name)
			slack := 3 * time.Second // a loaded machine's scheduling: this bound only catches hangs
			bound := slack
			ttl := time.Minute // expiry cannot be what cleans up
			defaultClient := name == "redis-default-client"
			switch name {
			case "redis", "redlock-3":
				s.clientOptions = func(o *rueidis.ClientOption) {
					o.AlwaysPipelining = true
					o.PipelineMultiplex = -1
				}
			case "redis-default-client":
				bound = 2*time.Second + slack // the write timeout, and the slack
				// A canceled call gives up its connection at the write
				// timeout, and the cleanup that follows goes on a new one,
				// which can overtake the request still held: the lock then
				// waits for its TTL. Count, and wait for, those.
				ttl = 3 * time.Second
			}
			var b *backend
			var hold, pass, drop func()
			servers := 1
			const stall = 300 * time.Millisecond // shorter than the clients' timeouts
			switch name {
			case "memcache":
				servers := s.memcacheServers(1, nil)
				b, _ = s.memcacheBackend(name, servers)
				// A stopped memcached: its kernel still takes the requests,
				// which it serves once resumed.
				hold = func() {
					if err := servers[0].Pause(); err != nil {
						t.Fatal(err)
					}
				}
				pass = func() {
					if err := servers[0].Resume(); err != nil {
						t.Fatal(err)
					}
				}
			default:
				if name == "redlock-3" {
					servers = 3
				}
				srvs := s.redisServers(servers)
				addrs := make([]string, servers)
				var proxies []*faultproxy.Proxy
				for i, srv := range srvs {
					p := s.proxy(srv.Addr())
					proxies = append(proxies, p)
					addrs[i] = p.Addr()
				}
				b = s.redisBackendAt(name, srvs, addrs, s.prefix())
				b.opts.StoreTimeout = 0 // the default: it bounds the cleanup after a cancellation
				set := func(dir faultproxy.Direction, m faultproxy.Mode) func() {
					return func() {
						for _, p := range proxies {
							p.Set(dir, m)
						}
					}
				}
				hold = set(faultproxy.ToServer|faultproxy.ToClient, faultproxy.Hold())
				pass = set(faultproxy.ToServer|faultproxy.ToClient, faultproxy.Pass())
				drop = set(faultproxy.ToClient, faultproxy.Drop())
			}
			rec := contention.NewRecorder()
			caller := rec.Locker(0, b.locker(t, 0))
			holder := rec.Locker(1, b.locker(t, 1))
			// A client that has run: its scripts are loaded on the
			// servers. (A release sent by SHA-1 to a server that lost its
			// scripts, whose NOSCRIPT answer comes after its caller gave up,
			// is not sent again in full: that lock then waits for its TTL.)
			for _, l := range []lock.Locker{caller, holder} {
				warm, err := l.TryLock(s.ctx, "warm", ttl)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(s.ctx, warm); err != nil {
					t.Fatal(err)
				}
			}
			var mine lock.Lock
			res := "" // each stage locks a resource of its own
			stages := []stage{
				{name: "lock-while-stalled", setup: hold, heal: pass,
					call: func(ctx context.Context) error { _, err := caller.Lock(ctx, res, ttl); return err }},
				{name: "trylock-while-stalled", setup: hold, heal: pass,
					call: func(ctx context.Context) error { _, err := caller.TryLock(ctx, res, ttl); return err }},
				{name: "lock-while-replies-lost", setup: drop, heal: pass,
					call: func(ctx context.Context) error { _, err := caller.Lock(ctx, res, ttl); return err }},
				{name: "lock-while-waiting-to-retry", leaves: 1,
					setup: func() {
						var err error
						if mine, err = holder.TryLock(s.ctx, res, ttl); err != nil {
							t.Fatal(err)
						}
					},
					heal: func() {
						if err := holder.Unlock(s.ctx, mine); err != nil {
							t.Errorf("holder's Unlock: %v", err)
						}
					},
					call: func(ctx context.Context) error { _, err := caller.Lock(ctx, res, ttl); return err }},
				{name: "extend-while-stalled", leaves: 1,
					setup: func() {
						var err error
						if mine, err = caller.TryLock(s.ctx, res, ttl); err != nil {
							t.Fatal(err)
						}
						hold()
					},
					heal: pass,
					call: func(ctx context.Context) error { _, err := caller.Extend(ctx, mine, ttl); return err }},
				{name: "unlock-while-stalled", leaves: 1,
					setup: hold, heal: pass,
					call: func(ctx context.Context) error { return caller.Unlock(ctx, mine) }},
			}
			var longest time.Duration
			ran := 0
			leftAfterHeal := 0
			for _, st := range stages {
				if st.setup == nil {
					continue // the store has no such fault (memcached: lost replies)
				}
				if st.name != "unlock-while-stalled" { // unlocks the previous stage's lock
					res = st.name
				}
				st.setup()
				ctx, cancel := context.WithCancel(s.ctx)
				timer := time.AfterFunc(cancelAfter, cancel)
				canceledAt := time.Now().Add(cancelAfter)
				err := st.call(ctx)
				took := time.Since(canceledAt)
				timer.Stop()
				cancel()
				longest = max(longest, took)
				ran++
				if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("%s: canceled call = %v; want context.Canceled", st.name, err)
				}
				// Only hangs fail: the tight bound is TestCancellationExact's.
				if took > bound {
					t.Errorf("%s: the call returned %v after its context was canceled; want within %v", st.name, took, bound)
				}
				time.Sleep(stall - cancelAfter)
				st.heal()
				// Let the requests held during the stall, and the
				// cleanups queued behind them, reach the servers.
				time.Sleep(200 * time.Millisecond)
				left, err := faultkit.Residue(s.ctx, 3*time.Second, func(ctx context.Context) (int, error) {
					n, err := b.count(ctx)
					return max(n-st.leaves*servers, 0), err // a lock is a key on each server
				})
				leftAfterHeal += left
				if err != nil || (left != 0 && !defaultClient) {
					t.Errorf("%s: %d locks left once the fault was healed (%v); want none", st.name, left, err)
				}
				if st.name == "unlock-while-stalled" {
					// The caller's lock may still be there: the canceled
					// Unlock may or may not have reached the servers.
					_ = caller.Unlock(s.ctx, mine)
				}
			}
			rep := contention.Analyze("cancellation", name, rec)
			rep.Add("stages", fmt.Sprint(ran))
			rep.AddMillis("cancel_max_ms", longest)
			rep.Add("left_after_heal", fmt.Sprint(leftAfterHeal))
			s.finish(rep, b.count)
		})
	}
}

// The tight bound, on fake time: a canceled call returns at the very
// moment of the cancellation (20ms), at every stage, on the memory store
// with the single and the multi-store locker, and leaves nothing locked.
// (The Lock stages are also in the root package's tests; here with
// Extend, Unlock and Run too.)
func TestCancellationExact(t *testing.T) {
	for _, multi := range []bool{false, true} {
		backend := "memory"
		if multi {
			backend = "memory-quorum-3"
		}
		t.Run(backend, func(t *testing.T) {
			var rep contention.Report
			synctest.Test(t, func(t *testing.T) {
				ms := []*memory.Store{memory.New(), memory.New(), memory.New()}
				stores := []lock.Store{ms[0]}
				if multi {
					stores = []lock.Store{ms[0], ms[1], ms[2]}
				}
				mk := func() lock.Locker {
					if multi {
						l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: time.Hour})
						if err != nil {
							t.Fatal(err)
						}
						return l
					}
					l, err := lock.NewSingle(stores[0], &lock.Options{StoreTimeout: time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				rec := contention.NewRecorder()
				caller, holder := rec.Locker(0, mk()), rec.Locker(1, mk())
				slow := func(op memory.Op) func() {
					return func() {
						for _, m := range ms {
							m.Inject(memory.Fault{Ops: op, Delay: time.Hour})
						}
					}
				}
				clear := func() {
					for _, m := range ms {
						m.ClearFaults()
					}
				}
				const ttl = time.Minute
				var mine, theirs lock.Lock
				stages := []stage{
					{name: "lock-while-stalled", setup: slow(memory.OpAcquire),
						call: func(ctx context.Context) error { _, err := caller.Lock(ctx, "r", ttl); return err }},
					{name: "lock-while-reply-lost", setup: func() {
						for _, m := range ms {
							m.Inject(memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour, Err: errors.New("reset"), AfterApply: true})
						}
					}, call: func(ctx context.Context) error { _, err := caller.Lock(ctx, "r", ttl); return err }},
					{name: "lock-while-waiting-to-retry", leaves: 1, setup: func() {
						var err error
						if theirs, err = holder.TryLock(t.Context(), "r", ttl); err != nil {
							t.Fatal(err)
						}
					}, call: func(ctx context.Context) error {
						_, err := caller.Lock(ctx, "r", ttl, lock.WithRetry(lock.Retry{Attempts: lock.Forever, Delay: time.Hour}))
						return err
					}},
					{name: "extend-while-stalled", leaves: 1, setup: func() {
						_ = holder.Unlock(t.Context(), theirs)
						var err error
						if mine, err = caller.TryLock(t.Context(), "r", ttl); err != nil {
							t.Fatal(err)
						}
						slow(memory.OpExtend)()
					}, call: func(ctx context.Context) error { _, err := caller.Extend(ctx, mine, ttl); return err }},
					{name: "unlock-while-stalled", leaves: 1, setup: slow(memory.OpRelease),
						call: func(ctx context.Context) error { return caller.Unlock(ctx, mine) }},
					{name: "run-while-the-function-runs", setup: func() { _ = caller.Unlock(t.Context(), mine) },
						call: func(ctx context.Context) error {
							return lock.Run(ctx, caller, "r", ttl, func(ctx context.Context, _ lock.Lock) error {
								<-ctx.Done()
								return ctx.Err()
							})
						}},
				}
				for _, st := range stages {
					st.setup()
					ctx, cancel := context.WithCancel(t.Context())
					time.AfterFunc(cancelAfter, cancel)
					start := time.Now()
					err := st.call(ctx)
					if d := time.Since(start); d != cancelAfter {
						t.Errorf("%s: returned %v after the call began; want at the cancellation, %v", st.name, d, cancelAfter)
					}
					if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotAcquired) {
						t.Errorf("%s: canceled call = %v; want context.Canceled", st.name, err)
					}
					clear()
					synctest.Wait()
					held := 0
					for _, m := range ms[:len(stores)] {
						held += len(m.Resources())
					}
					if want := st.leaves * len(stores); held > want {
						t.Errorf("%s: %d locks left on the stores; want at most %d", st.name, held, want)
					}
				}
				rep = contention.Analyze("cancellation-exact", backend, rec)
				rep.Add("stages", fmt.Sprint(len(stages)))
				rep.AddMillis("cancel_max_ms", 0)
				for _, m := range ms {
					m.Expire("r")
				}
			})
			rep.Residue, rep.LeakedGoroutines = 0, 0 // synctest waits for every goroutine of the bubble
			faultkit.Emit(t, rep)
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("cancellation-exact on %s: %s", backend, bad)
			}
		})
	}
}
