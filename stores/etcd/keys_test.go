package etcd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// A lock's key is its resource's scope followed by its token, and an
// acquisition checks that no key in the scope exists: names that a
// careless layout would nest in each other's scopes (a NUL byte, two, a
// NUL at the end, a slash) must still be distinct locks, each held at
// once, each released without freeing another.
func TestNestedNamesAreDistinct(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client)
	ctx := ctxFor(t, 30*time.Second)
	names := []string{"a", "a/", "a/b", "a\x00", "a\x00b", "a\x00\x00", "a\x00\x00b", "a\x00\x01b", "\x00", "\x00\x00", "b"}
	token := func(i int) string { return fmt.Sprintf("secret~h%d", i) }
	for i, r := range names {
		if err := s.Acquire(ctx, r, token(i), 5*time.Second); err != nil {
			t.Errorf("Acquire(%q) while the other names are held = %v; want nil", r, err)
		}
	}
	for i, r := range names {
		if h, ok, err := s.Holder(ctx, r); err != nil || !ok || h != lock.HolderOf(token(i)) {
			t.Errorf("Holder(%q) = %q, %v, %v; want %q", r, h, ok, err, lock.HolderOf(token(i)))
		}
		if err := s.Release(ctx, r, token(i)); err != nil {
			t.Errorf("Release(%q) = %v; want nil", r, err)
		}
		for _, other := range names[i+1:] {
			if ok, err := s.Exists(ctx, other); err != nil || !ok {
				t.Errorf("Exists(%q) after Release(%q) = %v, %v; want true", other, r, ok, err)
			}
		}
	}
	if err := s.Release(ctx, "a", token(0)); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(a) twice = %v; want ErrNotHeld", err)
	}
}
