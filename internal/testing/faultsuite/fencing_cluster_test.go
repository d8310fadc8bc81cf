package faultsuite_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// repeatingFence is a Redis store whose fences repeat: every fenced
// acquisition answers fence 1, as a counter that went back would.
type repeatingFence struct{ *redis.Store }

func (r repeatingFence) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	return 1, r.Acquire(ctx, resource, token, ttl)
}

// AcquireQueued repeats the fence too: a waiting Lock takes its locks
// with it, and the embedded store's would answer the true fence.
func (r repeatingFence) AcquireQueued(ctx context.Context, a lock.QueuedAcquisition) (uint64, error) {
	fence, err := r.Store.AcquireQueued(ctx, a)
	if a.Fenced && err == nil {
		fence = 1
	}
	return fence, err
}

// paused-holder-fenced across a Cluster failover: holders stall past their
// TTL and then write, while the slot of the resource fails over to its
// replica (the slot's fence counter moves with it). Every stalled write
// must be refused by the fenced resource, before and after the failover.
// The positive control runs the same with fences that repeat: the
// resource then accepts stale writes.
func TestPausedHolderFencedClusterFailover(t *testing.T) {
	for _, broken := range []bool{false, true} {
		name := "paused-holder-fenced-failover"
		if broken {
			name = "control-repeating-fence-failover"
		}
		t.Run(name, func(t *testing.T) {
			c := sharedCluster(t)
			s := begin(t, name, "redis-cluster")
			// The control's unsafety is stale writes accepted, which it
			// asserts itself; finish checks its residue and leaks.
			s.hazard = broken
			s.lossy = !broken
			b, _ := s.clusterBackend(c)
			if broken {
				stores := b.stores
				b.stores = func(client int) []lock.Store {
					return []lock.Store{repeatingFence{stores(client)[0].(*redis.Store)}}
				}
			}
			const ttl = 300 * time.Millisecond
			cfg := b.config(2, ttl, 10*time.Millisecond, 3*time.Second)
			cfg.Resources = []string{"a"}
			cfg.Writes = 2
			cfg.Pause = 5 * time.Millisecond
			var stalls atomic.Int32
			cfg.BeforeWrite = func(ctx context.Context, _ int, _ lock.Lock) {
				if stalls.Add(1)%10 == 1 { // every tenth write stalls past the TTL
					select {
					case <-time.After(3 * ttl):
					case <-ctx.Done():
					}
				}
			}
			cfg.Faults = []contention.Fault{{
				Name: "cluster failover", At: time.Second,
				Inject: func() error { _, err := c.FailoverSlot(redistest.Slot("{a}")); return err },
			}}
			rep, _ := s.run(cfg)
			switch {
			case broken && rep.StaleAccepted == 0:
				t.Errorf("repeating fences: want stale writes accepted: %s", rep.Line())
			case !broken && (rep.FencedRejected == 0 || rep.FencedWrites == 0 || !rep.Recovered):
				t.Errorf("want the stalled holders' writes refused by the fence, and locks after the failover: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}
