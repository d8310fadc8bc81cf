package memcache_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// newStore returns a store over client with the given options, failing the
// test on error.
func newStore(t testing.TB, client *gomemcache.Client, opts ...memcache.Option) *memcache.Store {
	t.Helper()
	s, err := memcache.New(client, opts...)
	if err != nil {
		t.Fatalf("memcache.New = %v", err)
	}
	return s
}

// ctx returns the test's context bounded by a minute, so that a call that
// hangs fails the test rather than the whole binary.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// hashedKey is the documented hashed form of a resource's key, computed
// independently of the store.
func hashedKey(prefix, resource string) string {
	sum := sha256.Sum256([]byte(resource))
	return prefix + "#" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// item reads key from srv with the meta protocol (value and remaining
// TTL), failing the test on error.
func item(t testing.TB, srv *memcachetest.Server, key string) (memcachetest.Item, bool) {
	t.Helper()
	it, found, err := srv.Get(key)
	if err != nil {
		t.Fatalf("meta get %q: %v", key, err)
	}
	return it, found
}

// wantFailedFree fails the test unless AcquireFenced of r (call) failed
// with an error other than ErrNotAcquired and left r free.
func wantFailedFree(t testing.TB, s *memcache.Store, call, r string, fence uint64, err error) {
	t.Helper()
	if err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("%s = %d, %v; want an error other than ErrNotAcquired", call, fence, err)
	}
	if held, err := s.Exists(ctx(t), r); err != nil || held {
		t.Fatalf("Exists(%s) after the failed %s = %v, %v; want false: nothing may stay held", r, call, held, err)
	}
}
