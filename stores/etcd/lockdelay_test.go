package etcd_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultsuite"
	"github.com/lockkit/lock/stores/etcd"
)

// Lock delay on etcd (issue #19), as internal/testing/faultsuite runs it
// on the other stores: a holder pauses past its validity without
// releasing while a rival tries for the lock. With Options.LockDelay the
// lease outlives the pause and the holder wakes to find nobody else has
// been inside; the control, without the delay, lets the rival in once
// the lease expires.
func TestLockDelayPausedHolder(t *testing.T) {
	const (
		// The shortest lease; etcd may notice its expiry half a second
		// late, so the holder wakes well after that.
		ttl   = etcdtest.MinTTL
		pause = 4 * ttl
		delay = 15 * time.Second // well past the pause, however slow the machine
	)
	twins(t, "lock-delay-paused-holder", "no-lock-delay-paused-holder", func(t *testing.T, s *scenario) {
		d := delay
		if s.control {
			d = 0
		}
		var lockers []lock.Locker
		var stores []*etcd.Store
		for range 2 {
			es, err := etcd.New(s.client(), etcd.WithPrefix(s.prefix), etcd.WithMinTTL(etcdtest.MinTTL))
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, es)
			l, err := lock.NewSingle(es, &lock.Options{LockDelay: d})
			if err != nil {
				t.Fatal(err)
			}
			lockers = append(lockers, l)
		}
		rep := faultsuite.PausedHolder{Holder: lockers[0], Rival: lockers[1], TTL: ttl, Pause: pause, Delayed: !s.control}.Run(s.ctx, t)
		rep.Scenario, rep.Backend = s.name, "etcd-3"
		// The stores keep the leases of released locks for reuse, each as
		// long as a lock's TTL plus the delay: closing them revokes those.
		for _, es := range stores {
			if err := es.Close(s.ctx); err != nil {
				t.Errorf("Close = %v", err)
			}
		}
		s.finish(rep, ttl+2*time.Second)
	})
}
