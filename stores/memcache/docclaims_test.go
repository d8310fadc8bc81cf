package memcache_test

// Checks of what the package's documentation (doc.go and the doc comments
// of its exported names) promises and the other tests do not cover.

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// "the lockers take that second off every lock's validity, and refuse a
// TTL too short to leave any validity (with the default drift allowance,
// anything up to about 1.012s) with an error matching lock.ErrInvalid"
func TestDocShortestTTLWithDefaultDrift(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("doc:"))
	locker, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []time.Duration{time.Second, 1010 * time.Millisecond} {
		if _, err := locker.TryLock(ctx(t), "r", ttl); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("TryLock(r, %v) = %v; want ErrInvalid (no validity left)", ttl, err)
		}
	}
	if _, found := item(t, srv, "doc:r"); found {
		t.Fatalf("a refused TTL left the key doc:r on the server; want nothing sent")
	}
	// Just above the bound some validity is left: the lockers send it
	// (and may then find the answer came too late to leave any).
	if _, err := locker.TryLock(ctx(t), "r", 1015*time.Millisecond); errors.Is(err, lock.ErrInvalid) {
		t.Errorf("TryLock(r, 1.015s) = %v; want it sent, not refused as invalid", err)
	}
}

// The defaults the options' docs name.
func TestDocDefaults(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s := newStore(t, srv.Client(t))
	if s.String() != "memcache" {
		t.Errorf("String() of a store made without WithName = %q; want memcache", s.String())
	}
	if _, err := s.AcquireFenced(ctx(t), "r", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, found := item(t, srv, memcache.DefaultPrefix+"r"); !found {
		t.Errorf("no item %sr after AcquireFenced(r); want the lock under DefaultPrefix", memcache.DefaultPrefix)
	}
	if it, found := item(t, srv, memcache.DefaultPrefix+"#fence"); !found || it.TTL != -1 {
		t.Errorf("fence counter %s#fence = %+v, %v; want an item that never expires", memcache.DefaultPrefix, it, found)
	}
}
