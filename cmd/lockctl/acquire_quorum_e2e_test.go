package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
	redisstore "github.com/lockkit/lock/stores/redis"
)

// With several stores, acquire leaves the lock on every store that answers
// within the store timeout, not only on the quorum that granted it first:
// the calls still under way when Lock returns would otherwise end with the
// process. Here the third store's requests reach it 1.5s late, through a
// proxy: later than a lockctl that did not wait would have closed its
// connection (rueidis gives a silent peer one second after Close). The
// test then asks each server directly.
func TestAcquireRedlockReachesEveryStore(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 3)
	p, err := faultproxy.New(srvs[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	p.Set(faultproxy.ToServer, faultproxy.Delay(1500*time.Millisecond, 0))
	stores := make([]*redisstore.Store, len(srvs))
	for i, s := range srvs {
		stores[i] = redisStore(t, s)
	}

	args := []string{"acquire", "--ttl", "1m", "--lock", filepath.Join(t.TempDir(), "job.lock"), "--store-timeout", "10s"}
	for _, addr := range []string{srvs[0].Addr(), srvs[1].Addr(), p.Addr()} {
		args = append(args, "--store", "redis://"+addr)
	}
	if code, _, stderr := lockctl(t, nil, append(args, "ci/deploy")...); code != 0 {
		t.Fatalf("acquire: exit %d, %s", code, stderr)
	}
	for i, s := range stores {
		if held, err := s.Exists(t.Context(), "ci/deploy"); err != nil || !held {
			t.Errorf("store %d: Exists(ci/deploy) once acquire exited = %v, %v; want true: the lock must be on every store that answered within the store timeout", i, held, err)
		}
	}
}
