package faultsuite_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// backendCase builds a backend for a scenario and says the TTL to use on
// it (memcached counts whole seconds, and the lockers take one off every
// validity).
type backendCase struct {
	name string
	ttl  time.Duration
	make func(s *scenario) *backend
}

func allBackends(t *testing.T) []backendCase {
	return []backendCase{
		{"memory", time.Second, func(*scenario) *backend { return memBackend() }},
		{"redis", time.Second, func(s *scenario) *backend {
			b, _ := s.redisBackend("redis", s.redisServers(1))
			return b
		}},
		{"redlock-5", time.Second, func(s *scenario) *backend {
			b, _ := s.redisBackend("redlock-5", s.redisServers(5))
			return b
		}},
		{"redis-cluster", time.Second, func(s *scenario) *backend {
			b, _ := s.clusterBackend(sharedCluster(t))
			return b
		}},
		{"memcache", 3 * time.Second, func(s *scenario) *backend {
			b, _ := s.memcacheBackend("memcache", s.memcacheServers(1, nil))
			return b
		}},
		{"memcache-server", 3 * time.Second, func(s *scenario) *backend {
			b, _ := s.memcacheServerBackend("memcache-server", s.memcacheServers(1, nil))
			return b
		}},
		{"memcache-quorum-3", 3 * time.Second, func(s *scenario) *backend {
			b, _ := s.memcacheBackend("memcache-quorum-3", s.memcacheServers(3, nil))
			return b
		}},
		{"mixed-3redis-2memcache", 3 * time.Second, func(s *scenario) *backend {
			return s.mixedBackend(s.redisServers(3), s.memcacheServers(2, nil))
		}},
	}
}

// sharedCluster returns the shared Redis Cluster, healthy. Call it before
// begin, so its goroutines are part of the scenario's baseline.
func sharedCluster(t *testing.T) *redistest.Cluster {
	t.Helper()
	c := redistest.SharedCluster(t)
	c.WaitHealthy(t)
	return c
}

// The baseline: eight clients contend for two resources on every backend,
// with no fault. Every lock is checked against the servers' TTLs.
func TestContention(t *testing.T) {
	for _, bc := range allBackends(t) {
		t.Run(bc.name, func(t *testing.T) {
			if bc.name == "redis-cluster" {
				sharedCluster(t)
			}
			s := begin(t, "contention", bc.name)
			b := bc.make(s)
			cfg := b.config(8, bc.ttl, 2*time.Millisecond, 2*time.Second)
			cfg.Resources = []string{"a", "b"}
			rep, res := s.run(cfg)
			// At least one lock per worker, however slow the machine: a
			// count within the run's time would be a speed threshold.
			if rep.Acquisitions < 8 || rep.MaxHolders != 1 || rep.ValidityChecked == 0 || res.Writes == 0 {
				t.Errorf("the workload did not run as configured: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}

// TryLock race: 100 goroutines wait at one barrier, then all try at once.
// On a single store exactly one wins each round; on a quorum at most one
// (a round may split its votes so that nobody wins).
func TestTryLockRace(t *testing.T) {
	const goroutines, clients, rounds = 100, 10, 10
	for _, bc := range allBackends(t) {
		if bc.name == "redis-cluster" || bc.name == "mixed-3redis-2memcache" || bc.name == "memcache-quorum-3" {
			continue // the race is the store's: one single store and one quorum of each kind suffice
		}
		t.Run(bc.name, func(t *testing.T) {
			s := begin(t, "trylock-race", bc.name)
			b := bc.make(s)
			if b.quorum > 1 {
				// 500 store calls at once: leave them time on a loaded machine.
				b.opts.StoreTimeout = time.Second
			}
			rec := contention.NewRecorder()
			lockers := make([]lock.Locker, clients)
			for i := range lockers {
				lockers[i] = b.locker(t, i)
			}
			noWinner, failed := 0, 0
			for round := range rounds {
				resource := fmt.Sprintf("race-%d", round)
				barrier := make(chan struct{})
				var wg sync.WaitGroup
				var mu sync.Mutex
				var winners []lock.Lock
				var winnerLocker []lock.Locker
				var odd []error
				for g := range goroutines {
					l := rec.Locker(g, lockers[g%clients])
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-barrier
						held, err := l.TryLock(s.ctx, resource, bc.ttl)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							winners = append(winners, held)
							winnerLocker = append(winnerLocker, l)
						case errors.Is(err, lock.ErrNotAcquired):
						default:
							odd = append(odd, err)
						}
					}()
				}
				close(barrier)
				wg.Wait() // every winner holds until every attempt returned
				for i, w := range winners {
					if err := winnerLocker[i].Unlock(s.ctx, w); err != nil {
						t.Errorf("round %d: Unlock = %v", round, err)
					}
				}
				// On a quorum, a store answering late is a failure of the
				// attempt (ErrUnavailable), not a safety matter; on a
				// single store there is no store timeout.
				failed += len(odd)
				for _, err := range odd {
					if b.quorum == 1 || !errors.Is(err, lock.ErrUnavailable) {
						t.Errorf("round %d: a TryLock failed other than by contention: %v", round, err)
						break
					}
				}
				switch {
				case len(winners) > 1:
					t.Errorf("round %d: %d winners; want at most one", round, len(winners))
				case len(winners) == 0 && b.quorum == 1:
					t.Errorf("round %d: nobody won on a single store; want exactly one winner", round)
				case len(winners) == 0:
					noWinner++
				}
			}
			rep := contention.Analyze("trylock-race", bc.name, rec)
			rep.Add("rounds", fmt.Sprint(rounds))
			rep.Add("rounds_without_winner", fmt.Sprint(noWinner))
			rep.Add("failed_calls", fmt.Sprint(failed))
			s.finish(rep, b.count)
		})
	}
}

// A late holder (its lock expired and another took it) and a forger (the
// right resource, a wrong token) can neither release nor extend the
// successor's lock: they get ErrNotHeld, and the successor's lock keeps
// its token and TTL.
func TestForeignAndLateUnlock(t *testing.T) {
	for _, bc := range allBackends(t) {
		if bc.name == "memory" || bc.name == "redis-cluster" {
			continue
		}
		t.Run(bc.name, func(t *testing.T) {
			s := begin(t, "foreign-late-unlock-extend", bc.name)
			b := bc.make(s)
			rec := contention.NewRecorder()
			late, next := rec.Locker(0, b.locker(t, 0)), rec.Locker(1, b.locker(t, 1))
			ttl := bc.ttl
			first, err := late.TryLock(s.ctx, "r", ttl)
			if err != nil {
				t.Fatalf("TryLock = %v", err)
			}
			// Wait for the lock to expire on the servers, not only for its
			// validity to run out.
			eventually(t, 2*ttl+5*time.Second, "the first lock expires", func() bool {
				ttls, err := b.serverTTL(s.ctx, first)
				return err == nil && len(ttls) == 0 && !first.Valid()
			})
			second, err := next.TryLock(s.ctx, "r", time.Minute)
			if err != nil {
				t.Fatalf("successor's TryLock after expiry = %v", err)
			}
			before, err := b.serverTTL(s.ctx, second)
			if err != nil || len(before) < b.quorum {
				t.Fatalf("successor's lock on the servers: %v, %v", before, err)
			}
			forged := second
			forged.Token = "forged-" + second.Token
			for name, call := range map[string]func() error{
				"late Unlock":    func() error { return late.Unlock(s.ctx, first) },
				"late Extend":    func() error { _, err := late.Extend(s.ctx, first, time.Hour); return err },
				"foreign Unlock": func() error { return late.Unlock(s.ctx, forged) },
				"foreign Extend": func() error { _, err := late.Extend(s.ctx, forged, time.Hour); return err },
			} {
				if err := call(); !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("%s = %v; want ErrNotHeld", name, err)
				}
			}
			// The successor's TTL is a minute: an hour would mean a foreign
			// Extend went through. (More servers may hold it now than
			// right after TryLock, which returns once a quorum granted it.)
			after, err := b.serverTTL(s.ctx, second)
			if err != nil || len(after) < b.quorum {
				t.Fatalf("successor's lock after the late and foreign calls: held on %d servers (%v); want at least %d", len(after), err, b.quorum)
			}
			for _, d := range after {
				if d > time.Minute+time.Second {
					t.Errorf("the successor's lock has %v left, more than its TTL: a foreign Extend touched it", d)
				}
			}
			if err := next.Unlock(s.ctx, second); err != nil {
				t.Errorf("successor's Unlock = %v", err)
			}
			rep := contention.Analyze("foreign-late-unlock-extend", bc.name, rec)
			if rep.Acquisitions != 2 {
				t.Errorf("want the two acquisitions recorded: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}
