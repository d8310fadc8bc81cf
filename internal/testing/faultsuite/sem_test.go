package faultsuite_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// Semaphores and read-write locks under contention (issue #17): the
// overlap checker, generalised, must find at most the limit of holders at
// once, and no writer with anyone else. A few seconds per backend.

// semBackends are the backends of the semaphore scenarios: a single store
// of each kind and Redlock. (Redis and memcached have no permits of their
// own here unless their store is a lock.Permitter: the semaphores are then
// made of plain locks, as on Redlock.)
func semBackends(t *testing.T) []backendCase {
	var out []backendCase
	for _, bc := range allBackends(t) {
		switch bc.name {
		case "memory", "redis", "redlock-5", "memcache":
			out = append(out, bc)
		}
	}
	return out
}

// semResources are the resources of the semaphore scenarios.
var semResources = []string{"a", "b"}

// residue counts what the scenario left on b's servers: its lock keys
// and, on the memory store, whose permits are not locks, the permits held
// on the scenario's resources.
func residue(b *backend) func(ctx context.Context) (int, error) {
	if b.name != "memory" || b.count == nil {
		return b.count
	}
	p := b.stores(0)[0].(lock.Permitter)
	return func(ctx context.Context) (int, error) {
		n, err := b.count(ctx)
		for _, r := range semResources {
			for _, name := range []string{r, r + "~read"} {
				held, perr := p.Permits(ctx, name)
				if perr != nil {
					return 0, perr
				}
				n += held
			}
		}
		return n, err
	}
}

func TestSemaphoreContention(t *testing.T) {
	const limit = 2
	for _, bc := range semBackends(t) {
		t.Run(bc.name, func(t *testing.T) {
			s := begin(t, "semaphore-contention", bc.name)
			b := bc.make(s)
			cfg := b.config(6, bc.ttl, 5*time.Millisecond, 1500*time.Millisecond)
			cfg.Resources = semResources
			faultkit.Semaphores(&cfg, limit)
			rep, _ := s.run(cfg)
			rep.Add("limit", "2")
			if rep.Acquisitions < 20 || rep.MaxHolders != limit {
				t.Errorf("the workload did not run as configured (want %d holders at once): %s", limit, rep.Line())
			}
			s.finish(rep, residue(b))
		})
	}
}

func TestRWLockerContention(t *testing.T) {
	for _, bc := range semBackends(t) {
		t.Run(bc.name, func(t *testing.T) {
			s := begin(t, "rwlock-contention", bc.name)
			b := bc.make(s)
			cfg := b.config(6, bc.ttl, 5*time.Millisecond, 1500*time.Millisecond)
			cfg.Resources = semResources
			faultkit.ReadersWriters(&cfg, 2)
			cfg.Retry = &lock.Retry{Attempts: lock.Forever, Delay: 2 * time.Millisecond, MaxDelay: 20 * time.Millisecond}
			cfg.Pause = 2 * time.Millisecond
			rep, res := s.run(cfg)
			writers := 0
			for _, op := range res.Recorder.Ops() {
				if op.Kind == contention.KindAcquire && op.Outcome == contention.OK && !op.Shared {
					writers++
				}
			}
			rep.Add("writer_acquisitions", strconv.Itoa(writers))
			if writers == 0 || res.Writes == 0 || rep.Acquisitions == writers {
				t.Errorf("the workload did not run as configured (want readers and writers served): %s", rep.Line())
			}
			s.finish(rep, residue(b))
		})
	}
}

// The positive controls: a semaphore that admits three holders where two
// are allowed, and readers and writers that do not see each other
// (their read-write locks are over different stores), must be caught.
func TestSemaphoreControls(t *testing.T) {
	t.Run("over-admitting semaphore", func(t *testing.T) {
		s := beginControl(t, "control-semaphore-over-admits", "memory")
		b := memBackend()
		cfg := b.config(6, time.Second, 5*time.Millisecond, time.Second)
		faultkit.Semaphores(&cfg, 3)
		cfg.Limit = 2
		rep, _ := s.run(cfg)
		if rep.MaxHolders != 3 {
			t.Errorf("want 3 holders at once from a semaphore of 3: %s", rep.Line())
		}
		s.finish(rep, residue(b))
	})
	t.Run("readers and writers apart", func(t *testing.T) {
		s := beginControl(t, "control-rwlock-apart", "memory")
		writers, readers := memory.New(), memory.New()
		b := &backend{name: "memory", quorum: 1, stores: func(client int) []lock.Store {
			if client >= 2 {
				return []lock.Store{readers}
			}
			return []lock.Store{writers}
		}}
		cfg := b.config(6, time.Second, 5*time.Millisecond, time.Second)
		faultkit.ReadersWriters(&cfg, 2)
		rep, _ := s.run(cfg)
		s.finish(rep, nil)
	})
}
