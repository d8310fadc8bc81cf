package faultsuite_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// A holder stalls — as in a long GC pause or a stopped process — right
// after checking that its lock is valid, for longer than the TTL, and then
// writes. Another client has taken the lock meanwhile and written under a
// newer fence: the fenced resource must refuse the stale write. The
// stalled holder writes outside its claim, so the overlap checker sees
// nothing; only fencing can catch this. The lost-update counter, which
// takes the same writes without fences, shows what they would have done.
func TestPausedHolderFenced(t *testing.T) {
	for _, bc := range allBackends(t) {
		if bc.name != "memory" && bc.name != "redis" && bc.name != "redis-cluster" && bc.name != "memcache" {
			continue // the stores that fence
		}
		t.Run(bc.name, func(t *testing.T) {
			if bc.name == "redis-cluster" {
				sharedCluster(t)
			}
			s := begin(t, "paused-holder-fenced", bc.name)
			s.lossy = true
			b := bc.make(s)
			ttl := 300 * time.Millisecond
			if bc.name == "memcache" {
				ttl = 2 * time.Second // whole seconds, less one of validity
			}
			cfg := b.config(2, ttl, 10*time.Millisecond, max(2*time.Second, 4*ttl))
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
			rep, _ := s.run(cfg)
			if rep.FencedRejected == 0 || rep.FencedWrites == 0 {
				t.Errorf("want the stalled holders' writes refused by the fence: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}
