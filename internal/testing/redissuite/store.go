package redissuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

func (f Factory) testValidation(t *testing.T) {
	s := f.Server(t, redistest.Start(t))
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("r", redisstore.MaxResourceLen+1)
	err := s.ValidateResource(long)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "4097 bytes") {
		t.Errorf("ValidateResource(%d bytes) = %v; want lock.ErrInvalid naming the length", len(long), err)
	}
	if err := s.ValidateResource(long[:redisstore.MaxResourceLen]); err != nil {
		t.Errorf("ValidateResource(MaxResourceLen bytes) = %v; want nil", err)
	}
	if err := s.Acquire(ctx, long, "t", time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Acquire(too long) = %v; want lock.ErrInvalid", err)
	}
	for name, err := range map[string]error{
		"Acquire empty resource":  s.Acquire(ctx, "", "t", time.Second),
		"Acquire empty token":     s.Acquire(ctx, "r", "", time.Second),
		"Acquire zero ttl":        s.Acquire(ctx, "r", "t", 0),
		"Release empty token":     s.Release(ctx, "r", ""),
		"Extend negative ttl":     s.Extend(ctx, "r", "t", -time.Second),
		"WaitRelease empty":       s.WaitRelease(ctx, ""),
		"AcquireFenced empty tok": func() error { _, err := s.AcquireFenced(ctx, "r", "", time.Second); return err }(),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want lock.ErrInvalid", name, err)
		}
	}
	// The locker refuses a too-long name before sending anything.
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, long, time.Second); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("TryLock(too long) = %v; want lock.ErrInvalid", err)
	}
}

// testKeysOnCluster checks that names with braces map to keys in one slot
// on a real cluster, and stay distinct.
func (f Factory) testKeysOnCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	s := f.Cluster(t, c, redisstore.WithPrefix("keys:"))
	ctx := ctxFor(t, 30*time.Second)
	names := []string{"x", "{x}", "}a{", "{}", "{", "}", "a}b{c", "%7D", "}"}
	tokens := map[string]string{}
	for _, r := range names {
		if _, dup := tokens[r]; dup {
			continue
		}
		tokens[r] = "tok-" + r
		if _, err := s.AcquireFenced(ctx, r, tokens[r], time.Minute); err != nil {
			t.Fatalf("AcquireFenced(%q) = %v; want nil (distinct names must not collide, keys must share a slot)", r, err)
		}
	}
	admin := c.Nodes[0]
	lockKey := "keys:{%7Da{}" // "}" escaped, "{" as it is
	slot, err := admin.Do("CLUSTER", "KEYSLOT", lockKey).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	counter := redisstore.CounterKey(lockKey, true)
	fslot, err := admin.Do("CLUSTER", "KEYSLOT", counter).AsInt64()
	if err != nil || fslot != slot {
		t.Fatalf("lock key of }a{ in slot %d, its fence counter %q in slot %d (%v)", slot, counter, fslot, err)
	}
	// The counter of the slot is on the slot's master, and holds the
	// fence of the lock taken last in the slot.
	if v, err := c.MasterOf(t, int(slot)).Do("GET", counter).AsInt64(); err != nil || v == 0 {
		t.Fatalf("GET %q on the slot's master = %d, %v; want the fence counter", counter, v, err)
	}
	// The key really is where the layout says, on the node serving its slot.
	got, err := c.MasterOf(t, int(slot)).Do("GET", lockKey).ToString()
	if err != nil || got != "tok-}a{" {
		t.Fatalf("GET %q on the slot's master = %q, %v; want the token of }a{", lockKey, got, err)
	}
	for r, tok := range tokens {
		if err := s.Release(ctx, r, tok); err != nil {
			t.Errorf("Release(%q) = %v", r, err)
		}
	}
}

// testAmbiguousOutcomes checks that failures are errors, never lock
// outcomes: a paused server (timeout after sending) and a dead one.
func (f Factory) testAmbiguousOutcomes(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	if err := s.Acquire(ctx, "held", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	short := func() context.Context { return ctxFor(t, 100*time.Millisecond) }
	calls := map[string]error{
		"Acquire(held)":       s.Acquire(short(), "held", "a", time.Minute),
		"Acquire(free)":       s.Acquire(short(), "free", "a", time.Minute),
		"Release(held)":       s.Release(short(), "held", "other"),
		"Extend(held)":        s.Extend(short(), "held", "other", time.Minute),
		"AcquireFenced(held)": func() error { _, err := s.AcquireFenced(short(), "held", "a", time.Minute); return err }(),
		"WaitRelease(held)":   s.WaitRelease(short(), "held"),
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for call, err := range calls {
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("%s on a paused server = %v; want context.DeadlineExceeded, no lock outcome", call, err)
		}
	}
	// The Acquire of free may have been applied once the server resumed:
	// a release by token cleans it up, as the lockers do.
	if err := s.Release(ctx, "free", "a"); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release(free, a) after resume = %v", err)
	}
	if err := s.Release(ctx, "held", "holder"); err != nil {
		t.Fatalf("Release(held, holder) after resume = %v; the paused calls changed the lock", err)
	}

	// A dead server fails every call at once: the client retries none of
	// them (it would retry reads until ctx ends).
	srv.Kill()
	start := time.Now()
	for call, err := range map[string]error{
		"Acquire":     s.Acquire(ctx, "r", "a", time.Minute),
		"Release":     s.Release(ctx, "r", "a"),
		"Extend":      s.Extend(ctx, "r", "a", time.Minute),
		"WaitRelease": s.WaitRelease(ctx, "r"),
		"Exists":      func() error { _, err := s.Exists(ctx, "r"); return err }(),
		"TTL":         func() error { _, _, err := s.TTL(ctx, "r"); return err }(),
	} {
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a dead server = %v; want a connection error", call, err)
		}
	}
	t.Logf("calls on a dead server took %v", time.Since(start))
}

func (f Factory) testScriptsReloadAfterFlush(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	flush := func() {
		t.Helper()
		if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	if _, err := s.AcquireFenced(ctx, "r", "a", time.Minute); err != nil {
		t.Fatalf("AcquireFenced after SCRIPT FLUSH = %v", err)
	}
	flush()
	if err := s.Extend(ctx, "r", "a", time.Minute); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH = %v", err)
	}
	flush()
	if err := s.Release(ctx, "r", "a"); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH = %v", err)
	}
	flush()
	if err := s.Release(ctx, "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second Release after SCRIPT FLUSH = %v; want ErrNotHeld", err)
	}
}

func (f Factory) testWaitReplicasStandalone(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv, redisstore.WithWaitReplicas(1, 50*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	for name, acquire := range map[string]func() error{
		"Acquire":       func() error { return s.Acquire(ctx, "r", "a", time.Minute) },
		"AcquireFenced": func() error { _, err := s.AcquireFenced(ctx, "r", "a", time.Minute); return err },
	} {
		err := acquire()
		if !errors.Is(err, redisstore.ErrNotReplicated) || !errors.Is(err, lock.ErrUnavailable) {
			t.Errorf("%s with WaitReplicas(1) on a server without replicas = %v; want ErrNotReplicated (and lock.ErrUnavailable)", name, err)
		}
		if held, err := s.Exists(ctx, "r"); err != nil || held {
			t.Errorf("Exists(r) after the unreplicated %s = %v, %v; want false: the store must release it", name, held, err)
		}
	}
	// A held resource is refused as usual, without waiting for replicas.
	plain := f.Server(t, srv, redisstore.WithPrefix("plainrepl:"))
	withRepl := f.Server(t, srv, redisstore.WithPrefix("plainrepl:"), redisstore.WithWaitReplicas(1, 50*time.Millisecond))
	if err := plain.Acquire(ctx, "h", "holder", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := withRepl.Acquire(ctx, "h", "b", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire of a held resource with WaitReplicas = %v; want ErrNotAcquired", err)
	}
	// Through a locker, the error says which store and why.
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, "r", time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) || !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("TryLock through a store with WaitReplicas = %v; want ErrNotReplicated and lock.ErrUnavailable", err)
	}
}

func (f Factory) testWaitReplicasCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx := ctxFor(t, 30*time.Second)
	one := f.Cluster(t, c, redisstore.WithWaitReplicas(1, 2*time.Second))
	for range 3 {
		fence, err := one.AcquireFenced(ctx, "r", "a", time.Minute)
		if err != nil || fence == 0 {
			t.Fatalf("AcquireFenced with WaitReplicas(1) on a cluster with one replica per master = %d, %v; want a fence", fence, err)
		}
		if err := one.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
		if err := one.Acquire(ctx, "r", "a", time.Minute); err != nil {
			t.Fatalf("Acquire with WaitReplicas(1) = %v", err)
		}
		if err := one.Release(ctx, "r", "a"); err != nil {
			t.Fatal(err)
		}
	}
	two := f.Cluster(t, c, redisstore.WithWaitReplicas(2, 50*time.Millisecond))
	if _, err := two.AcquireFenced(ctx, "r", "a", time.Minute); !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("AcquireFenced with WaitReplicas(2) and one replica = %v; want ErrNotReplicated", err)
	}
	if held, err := two.Exists(ctx, "r"); err != nil || held {
		t.Fatalf("Exists(r) after ErrNotReplicated = %v, %v; want false", held, err)
	}

	// A replica that stops answering does not confirm.
	lockKey := "{r}"
	paused := f.Cluster(t, c, redisstore.WithPrefix("paused:"), redisstore.WithWaitReplicas(1, 100*time.Millisecond))
	replica := c.ReplicaOf(t, c.MasterOf(t, redistest.Slot("paused:"+lockKey)))
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	err := paused.Acquire(ctx, "r", "a", time.Minute)
	if rerr := replica.Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, redisstore.ErrNotReplicated) {
		t.Fatalf("Acquire with WaitReplicas(1) while the replica is paused = %v; want ErrNotReplicated", err)
	}
	// The store releases the unconfirmed lock; if that release fails, the
	// error says so (and the lockers release by token once more).
	if held, herr := paused.Exists(ctx, "r"); herr != nil || (held && !strings.Contains(err.Error(), "releasing it failed")) {
		t.Fatalf("Exists(r) after %v = %v, %v; want false, or an error saying the release failed", err, held, herr)
	}
	c.WaitHealthy(t)
}

// untilAnswered calls f until it returns nil or a lock outcome, for at
// most 5s: right after a server restarts, each of the client's connections
// fails once before it reconnects.
func untilAnswered(f func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f()
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
