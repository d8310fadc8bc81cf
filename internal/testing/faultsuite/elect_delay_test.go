package faultsuite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultsuite"
)

// Lock delay: a holder pauses past its validity without releasing (a GC
// pause, a stopped process) while a rival tries to take the lock every
// few milliseconds. With Options.LockDelay, the holder wakes within the
// delay to find nobody else has been inside — its lock is still there
// for it to release; the control without the delay lets the rival in
// (see faultsuite.PausedHolder, which the other modules' stores run too).
func TestLockDelayPausedHolder(t *testing.T) {
	type timing struct{ ttl, pause, delay time.Duration }
	// The pause outlasts the TTL and the time the store takes to let an
	// expired lock go; the delay is well past the pause, however slow the
	// machine.
	fine := timing{ttl: 300 * time.Millisecond, pause: time.Second, delay: 5 * time.Second}
	// memcached counts whole seconds, and lets an item go up to a second
	// after its expiration: the store allows for that second, so a lock
	// of 2s is valid for about one.
	coarse := timing{ttl: 2 * time.Second, pause: 5 * time.Second, delay: 15 * time.Second}
	type delayBackend struct {
		electBackend
		timing
	}
	var backends []delayBackend
	for _, eb := range electBackends() {
		backends = append(backends, delayBackend{eb, fine})
	}
	backends = append(backends, delayBackend{electBackend{"memcache", func(s *scenario, n int, o lock.Options) candidates {
		b, _ := s.memcacheBackend("memcache", s.memcacheServers(1, nil))
		b.opts = o
		c := candidates{count: b.count}
		for i := range n {
			c.lockers = append(c.lockers, b.locker(s.t, i))
		}
		return c
	}}, coarse})
	for _, db := range backends {
		for _, d := range []time.Duration{db.delay, 0} {
			name := fmt.Sprintf("%s/delay=%v", db.name, d)
			t.Run(name, func(t *testing.T) {
				var s *scenario
				if d > 0 {
					s = begin(t, "lock-delay-paused-holder", db.name)
				} else {
					s = beginControl(t, "no-lock-delay-paused-holder", db.name)
				}
				c := db.build(s, 2, lock.Options{LockDelay: d})
				rep := faultsuite.PausedHolder{Holder: c.lockers[0], Rival: c.lockers[1], TTL: db.ttl, Pause: db.pause, Delayed: d > 0}.Run(s.ctx, t)
				s.finish(rep, c.count)
			})
		}
	}
}
