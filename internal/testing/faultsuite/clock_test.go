package faultsuite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// A node whose clock jumps forward expires its locks early: outside every
// guarantee Redlock makes, measured here so that the figures say what it
// costs. Loopback tests cannot move a server's clock, so the jump is an
// admin PEXPIRE of the lock keys on the jumped masters, again and again
// while workers contend and poll every few milliseconds.
//
// With three masters of five jumping, a poller gathers a majority while
// the holder is still within its validity: the positive control, which
// must show violations. With one master of five, a holder whose lock
// stands on a bare majority that includes the jumped master is left with
// a minority, and a poller can gather the jumped master and the two the
// holder never had (the hazard Kleppmann described for Redlock): whether
// that happens depends on how the votes split under contention, so the
// scenario reports its violations instead of failing on them (the
// lockers' background retries re-ask stores that failed, not stores that
// refused, so a holder can stay on a bare majority). Residue and leaks
// fail both.
func TestNodeClockJump(t *testing.T) {
	for _, c := range []struct {
		scenario string
		jumped   int
		control  bool
	}{
		{"hazard-clock-jump-one-node", 1, false},
		{"control-clock-jump-majority", 3, true},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			const ttl = 2 * time.Second
			var s *scenario
			if c.control {
				s = beginControl(t, c.scenario, "redlock-5")
			} else {
				s = begin(t, c.scenario, "redlock-5")
				s.hazard = true
			}
			servers := s.redisServers(5)
			b, prefix := s.redisBackend("redlock-5", servers)
			cfg := b.config(4, ttl, 100*time.Millisecond, 2*time.Second)
			cfg.Resources = []string{"a", "b"}
			cfg.Retry = &lock.Retry{Attempts: lock.Forever, Delay: 2 * time.Millisecond, MaxDelay: 5 * time.Millisecond}
			for i := range 12 {
				cfg.Faults = append(cfg.Faults, contention.Fault{
					Name: fmt.Sprintf("clock jump on %d of 5", c.jumped),
					At:   time.Duration(200+150*i) * time.Millisecond,
					Inject: func() error {
						for _, srv := range servers[:c.jumped] {
							for _, r := range cfg.Resources {
								if _, err := srv.PExpire(redisKey(prefix, r), time.Millisecond); err != nil {
									return err
								}
							}
						}
						return nil
					},
				})
			}
			rep, _ := s.run(cfg)
			if rep.Acquisitions == 0 {
				t.Errorf("no lock granted: %s", rep.Line())
			}
			s.finish(rep, b.count)
		})
	}
}
