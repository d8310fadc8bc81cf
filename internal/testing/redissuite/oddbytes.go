package redissuite

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testOddBytes: any name of 1 to MaxResourceLen bytes is a resource, NUL
// and invalid UTF-8 included (the package documentation), and tokens are
// kept byte for byte: each name gets its own lock under the documented
// key, and every call finds it there.
func (f Factory) testOddBytes(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithPrefix("odd:"))
	ctx := ctxFor(t, 30*time.Second)
	names := []string{"a\x00b", "a\x00c", "\xff\xfe", "\xff", "é", " ", "\r\n", "%", "%25", "}", "%7D"}
	for i, r := range names {
		if err := s.ValidateResource(r); err != nil {
			t.Errorf("ValidateResource(%q) = %v; want nil", r, err)
		}
		token := "s\x00\xff" + r + "~holder\x00" + r
		if _, err := s.AcquireFenced(ctx, r, token, time.Minute); err != nil {
			t.Fatalf("AcquireFenced(%q) = %v; want nil: %d names taken before, all distinct", r, err, i)
		}
		if got, err := srv.Do("GET", redisstore.LockKey("odd:", r)).ToString(); err != nil || got != token {
			t.Errorf("GET %q = %q, %v; want the token %q", redisstore.LockKey("odd:", r), got, err, token)
		}
		if who, held, err := s.Holder(ctx, r); err != nil || !held || who != "holder\x00"+r {
			t.Errorf("Holder(%q) = %q, %v, %v; want %q, true", r, who, held, err, "holder\x00"+r)
		}
		if err := s.Release(ctx, r, token[:len(token)-1]); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Release(%q) with its token less a byte = %v; want lock.ErrNotHeld", r, err)
		}
		if err := s.Extend(ctx, r, token, time.Minute); err != nil {
			t.Errorf("Extend(%q) = %v; want nil", r, err)
		}
		if _, err := s.AcquirePermit(ctx, r, token, 1, time.Minute); err != nil {
			t.Errorf("AcquirePermit(%q) = %v; want nil (permits are apart from locks)", r, err)
		}
	}
	for _, r := range names {
		token := "s\x00\xff" + r + "~holder\x00" + r
		if err := s.Release(ctx, r, token); err != nil {
			t.Errorf("Release(%q) = %v; want nil", r, err)
		}
		if err := s.ReleasePermit(ctx, r, token); err != nil {
			t.Errorf("ReleasePermit(%q) = %v; want nil", r, err)
		}
		if err := s.WaitRelease(ctx, r); err != nil {
			t.Errorf("WaitRelease(%q) of a free lock = %v; want nil", r, err)
		}
	}
	keys, err := srv.Do("KEYS", "odd:*").AsStrSlice()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys under the prefix once every lock and permit is released = %q, %v; want none", keys, err)
	}
}
