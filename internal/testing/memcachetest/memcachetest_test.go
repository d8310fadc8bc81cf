package memcachetest_test

import (
	"errors"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock/internal/testing/memcachetest"
)

// The options reach the server, the raw helpers read what gomemcache
// cannot, and Restart comes back empty on the same port.
func TestServer(t *testing.T) {
	s := memcachetest.Start(t, &memcachetest.Options{MemoryMB: 3, NoEvict: true})
	if n, err := s.Stat("limit_maxbytes"); err != nil || n != 3<<20 {
		t.Fatalf("Stat(limit_maxbytes) = %d, %v; want %d", n, err, 3<<20)
	}
	c := s.Client(t)
	if err := c.Add(&memcache.Item{Key: "k", Value: []byte("v1"), Expiration: 100}); err != nil {
		t.Fatalf("Add(k) = %v", err)
	}
	it, found, err := s.Get("k")
	if err != nil || !found || it.Value != "v1" || it.TTL < 99 || it.TTL > 100 {
		t.Fatalf("Get(k) = %+v, %v, %v; want value v1 with a TTL of 99–100s", it, found, err)
	}
	if _, found, err := s.Get("missing"); err != nil || found {
		t.Fatalf("Get(missing) = found %v, %v; want false, nil", found, err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("k"); !errors.Is(err, memcache.ErrCacheMiss) {
		// The pooled connection died with the old process: one error is
		// allowed, then the key must be missing.
		if _, err := c.Get("k"); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("Get(k) after Restart = %v; want a cache miss", err)
		}
	}
}

func TestStartN(t *testing.T) {
	servers := memcachetest.StartN(t, 3, nil)
	seen := map[string]bool{}
	for _, s := range servers {
		if seen[s.Addr()] {
			t.Fatalf("two servers on %s", s.Addr())
		}
		seen[s.Addr()] = true
		if err := s.Client(t).Ping(); err != nil {
			t.Fatalf("Ping(%s) = %v", s.Addr(), err)
		}
	}
}
