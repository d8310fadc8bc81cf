package etcd_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
)

// Semaphores and read-write locks under contention on etcd (issue #17),
// as internal/testing/faultsuite runs them on the other stores: at most
// the limit of holders at once, and a writer never with anyone else. The
// store keeps no permits of its own, so both are made of plain locks,
// each a key with a lease of its own. The checker (contention.CheckHolders)
// is the one the root fault tier's controls prove.

// semWorkload is the scenarios' workload: six clients on two resources,
// holding long enough to meet, and waiting for one another.
func (s *scenario) semWorkload(ttl time.Duration) contention.Config {
	cfg := s.config(6, ttl, 3*time.Second)
	cfg.Hold, cfg.Pause = 50*time.Millisecond, 5*time.Millisecond
	cfg.Retry = &lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	return cfg
}

func TestSemaphoreContention(t *testing.T) {
	const limit, ttl = 2, 2 * time.Second
	s := begin(t, "semaphore-contention", false)
	cfg := s.semWorkload(ttl)
	faultkit.Semaphores(&cfg, limit)
	rep, _ := s.run(cfg)
	rep.Add("limit", strconv.Itoa(limit))
	if rep.Acquisitions < 2*limit || rep.MaxHolders != limit {
		t.Errorf("the workload did not run as configured (want %d holders at once): %s", limit, rep.Line())
	}
	s.finish(rep, ttl+2*time.Second)
}

func TestRWLockerContention(t *testing.T) {
	const ttl = 2 * time.Second
	s := begin(t, "rwlock-contention", false)
	cfg := s.semWorkload(ttl)
	faultkit.ReadersWriters(&cfg, 2)
	rep, res := s.run(cfg)
	rep.Add("writes", strconv.Itoa(res.Writes))
	if res.Writes == 0 || rep.Acquisitions <= res.Writes || rep.MaxHolders < 2 {
		t.Errorf("the workload did not run as configured (want readers together and writers served): %s", rep.Line())
	}
	s.finish(rep, ttl+2*time.Second)
}
