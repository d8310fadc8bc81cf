package postgres_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/pgtest"
)

// Semaphores and read-write locks under contention on PostgreSQL (issue
// #17), as internal/testing/faultsuite runs them on the other stores: at
// most the limit of holders at once, and a writer never with anyone
// else. The store keeps no permits of its own, so both are made of plain
// locks, each a row. The checker (contention.CheckHolders) is the one the
// root fault tier's controls prove.

// semWorkload is the scenarios' workload: six clients on two resources,
// holding long enough to meet, and waiting for one another.
func (f *faultScenario) semWorkload(ttl time.Duration) contention.Config {
	cfg := f.config(6, ttl, 50*time.Millisecond, 3*time.Second, nil)
	cfg.Resources, cfg.Pause = []string{"a", "b"}, 5*time.Millisecond
	cfg.Retry = &lock.Retry{Attempts: lock.Forever, Delay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	return cfg
}

func TestFaultSemaphoreContention(t *testing.T) {
	const limit, ttl = 2, time.Second
	f := beginFault(t, "semaphore-contention", pgtest.Shared(t))
	cfg := f.semWorkload(ttl)
	faultkit.Semaphores(&cfg, limit)
	rep, _ := f.run(cfg)
	rep.Add("limit", strconv.Itoa(limit))
	rep = f.finish(rep, ttl)
	if bad := rep.Unsafe(); bad != "" {
		t.Errorf("%s: %s", f.name, bad)
	}
	if rep.Acquisitions < 2*limit || rep.MaxHolders != limit {
		t.Errorf("the workload did not run as configured (want %d holders at once): %s", limit, rep.Line())
	}
}

func TestFaultRWLockerContention(t *testing.T) {
	const ttl = time.Second
	f := beginFault(t, "rwlock-contention", pgtest.Shared(t))
	cfg := f.semWorkload(ttl)
	faultkit.ReadersWriters(&cfg, 2)
	rep, res := f.run(cfg)
	rep.Add("writes", strconv.Itoa(res.Writes))
	rep = f.finish(rep, ttl)
	if bad := rep.Unsafe(); bad != "" {
		t.Errorf("%s: %s", f.name, bad)
	}
	if res.Writes == 0 || rep.Acquisitions <= res.Writes || rep.MaxHolders < 2 {
		t.Errorf("the workload did not run as configured (want readers together and writers served): %s", rep.Line())
	}
}
