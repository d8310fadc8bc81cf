package etcd_test

// Checks of what the package's documentation (doc.go and the doc comments
// of its exported names) promises and the other tests do not cover.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/stores/etcd"
)

// WithTimeout bounds every call it names, within a caller's context that
// is still alive: the call returns an error that says so, does not match
// context.DeadlineExceeded, and is never a lock outcome.
func TestDocWithTimeoutBoundsEveryCall(t *testing.T) {
	cluster := etcdtest.Shared(t)
	p, err := faultproxy.New(cluster.Members[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	const bound = 300 * time.Millisecond
	s := newStore(t, clientOf(t, p.Addr()), etcd.WithPrefix(fmt.Sprintf("doc-timeout-%d/", time.Now().UnixNano())), etcd.WithTimeout(bound))
	ctx := ctxFor(t, time.Minute)
	if err := s.Acquire(ctx, "held", "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// A kept lease for Close to revoke, of a TTL no call below asks for
	// (an acquisition would take it).
	if err := s.Acquire(ctx, "kept", "a", 7*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "kept", "a"); err != nil {
		t.Fatal(err)
	}
	p.Set(faultproxy.Both, faultproxy.Hold())
	t.Cleanup(p.Heal)
	for _, c := range []struct {
		call    string
		do      func(ctx context.Context) error
		outcome error
	}{
		{"Acquire(r, b)", func(ctx context.Context) error { return s.Acquire(ctx, "r", "b", 10*time.Second) }, lock.ErrNotAcquired},
		{"AcquireFenced(r, b)", func(ctx context.Context) error {
			_, err := s.AcquireFenced(ctx, "r", "b", 10*time.Second)
			return err
		}, lock.ErrNotAcquired},
		{"AcquireQueued(held, b)", func(ctx context.Context) error {
			_, err := s.AcquireQueued(ctx, lock.QueuedAcquisition{Resource: "held", Token: "b", TTL: 10 * time.Second, Wait: time.Minute})
			return err
		}, lock.ErrNotAcquired},
		{"Release(held, a)", func(ctx context.Context) error { return s.Release(ctx, "held", "a") }, lock.ErrNotHeld},
		{"Extend(held, a)", func(ctx context.Context) error { return s.Extend(ctx, "held", "a", 10*time.Second) }, lock.ErrNotHeld},
		{"Exists(held)", func(ctx context.Context) error { _, err := s.Exists(ctx, "held"); return err }, nil},
		{"TTL(held)", func(ctx context.Context) error { _, _, err := s.TTL(ctx, "held"); return err }, nil},
		{"Holder(held)", func(ctx context.Context) error { _, _, err := s.Holder(ctx, "held"); return err }, nil},
		{"LastFence(held)", func(ctx context.Context) error { _, _, err := s.LastFence(ctx, "held"); return err }, nil},
		{"ForceRelease(held)", func(ctx context.Context) error { _, err := s.ForceRelease(ctx, "held"); return err }, nil},
		{"WaitRelease(held)", func(ctx context.Context) error { return s.WaitRelease(ctx, "held") }, nil},
		{"Close", func(ctx context.Context) error { return s.Close(ctx) }, nil},
	} {
		err := c.do(ctx)
		switch {
		case err == nil:
			t.Errorf("%s with etcd unreachable = nil; want the error of WithTimeout(%v)", c.call, bound)
		case errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%s ended by WithTimeout = %v; want an error that does not match context.DeadlineExceeded", c.call, err)
		case c.outcome != nil && errors.Is(err, c.outcome):
			t.Errorf("%s ended by WithTimeout = %v; want an error other than %v (the outcome is unknown)", c.call, err, c.outcome)
		case !strings.Contains(err.Error(), "WithTimeout"):
			t.Errorf("%s ended by WithTimeout = %v; want an error that says so", c.call, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the caller's context ended (%v) before the calls did: WithTimeout did not bound them", ctx.Err())
	}
}

// The defaults the options' docs name.
func TestDocDefaults(t *testing.T) {
	s, err := etcd.New(clientOf(t, etcdtest.Shared(t).Endpoints()...))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "etcd" {
		t.Errorf("String() of a store made without WithName = %q; want etcd", got)
	}
	if got := s.MinTTL(); got != etcd.DefaultMinTTL {
		t.Errorf("MinTTL() of a store made without WithMinTTL = %v; want DefaultMinTTL, %v", got, etcd.DefaultMinTTL)
	}
	if got := s.TTLGranularity(); got != 0 {
		t.Errorf("TTLGranularity() = %v; want 0", got)
	}
	ctx := ctxFor(t, 30*time.Second)
	// "with the default minimum of 2s, a TTL of 1.5s is taken, for a
	// lease of 2s"
	if err := s.Acquire(ctx, "doc-defaults/r", "a", 1500*time.Millisecond); err != nil {
		t.Errorf("Acquire(r, a, 1.5s) with the default minimum = %v; want nil", err)
	}
	if d, held, err := s.TTL(ctx, "doc-defaults/r"); err != nil || !held || d > 2*time.Second {
		t.Errorf("TTL(r) of a lock of 1.5s = %v, %v, %v; want at most 2s, held", d, held, err)
	}
	if err := s.Release(ctx, "doc-defaults/r", "a"); err != nil {
		t.Errorf("Release(r, a) = %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// Holder reports false once the key is gone; LastFence is the fence the
// holder got; Close may be called more than once and leaves the store
// usable.
func TestDocCloseLeavesTheStoreUsable(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix(fmt.Sprintf("doc-close-%d/", time.Now().UnixNano())))
	ctx := ctxFor(t, 30*time.Second)
	for i := range 2 {
		fence, err := s.AcquireFenced(ctx, "r", "h~a", 5*time.Second)
		if err != nil {
			t.Fatalf("round %d: AcquireFenced(r) = %v", i, err)
		}
		if last, ok, err := s.LastFence(ctx, "r"); err != nil || !ok || last != fence {
			t.Errorf("round %d: LastFence(r) = %d, %v, %v; want %d, true (the holder's fence)", i, last, ok, err, fence)
		}
		if h, ok, err := s.Holder(ctx, "r"); err != nil || !ok || h != "a" {
			t.Errorf("round %d: Holder(r) = %q, %v, %v; want a, true", i, h, ok, err)
		}
		if err := s.Release(ctx, "r", "h~a"); err != nil {
			t.Fatalf("round %d: Release(r) = %v", i, err)
		}
		if h, ok, err := s.Holder(ctx, "r"); err != nil || ok || h != "" {
			t.Errorf("round %d: Holder(r) after Release = %q, %v, %v; want \"\", false", i, h, ok, err)
		}
		for j := range 2 {
			if err := s.Close(ctx); err != nil {
				t.Errorf("round %d: Close #%d = %v; want nil", i, j+1, err)
			}
		}
	}
}

// "A lock's key is its holder's alone: the store's prefix, the resource's
// name, two NUL bytes, and the token", a NUL byte in a name written as
// NUL 0x01; "A key's value is the lock's TTL in whole seconds, rounded
// up, which TTL reports at most."
func TestDocKeysAndValues(t *testing.T) {
	client := clientOf(t, etcdtest.Shared(t).Endpoints()...)
	s := newStore(t, client, etcd.WithPrefix("doc-keys/"))
	ctx := ctxFor(t, 30*time.Second)
	for _, c := range []struct {
		resource, key string
		ttl           time.Duration
		value         string
	}{
		{"invoice/42", "doc-keys/invoice/42\x00\x00tok", 1500 * time.Millisecond, "2"},
		{"a\x00b", "doc-keys/a\x00\x01b\x00\x00tok", 10*time.Second + 1, "11"},
		{"whole", "doc-keys/whole\x00\x00tok", 5 * time.Second, "5"},
	} {
		if err := s.Acquire(ctx, c.resource, "tok", c.ttl); err != nil {
			t.Fatalf("Acquire(%q, tok, %v) = %v", c.resource, c.ttl, err)
		}
		resp, err := client.Get(ctx, c.key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != c.value {
			t.Errorf("key %q of a lock of %v = %v; want one key, of value %q", c.key, c.ttl, resp.Kvs, c.value)
		}
		if d, held, err := s.TTL(ctx, c.resource); err != nil || !held || d > wholeSeconds(c.value) {
			t.Errorf("TTL(%q) = %v, %v, %v; want held, at most %ss", c.resource, d, held, err, c.value)
		}
		if err := s.Release(ctx, c.resource, "tok"); err != nil {
			t.Fatalf("Release(%q) = %v", c.resource, err)
		}
		if resp, err := client.Get(ctx, c.key); err != nil || len(resp.Kvs) != 0 {
			t.Errorf("key %q after Release = %v, %v; want gone", c.key, resp.Kvs, err)
		}
	}
}

func wholeSeconds(s string) time.Duration {
	d, err := time.ParseDuration(s + "s")
	if err != nil {
		panic(err)
	}
	return d
}
