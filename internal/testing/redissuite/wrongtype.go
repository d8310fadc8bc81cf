package redissuite

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// A lock key holding another type of value (a list some other program
// wrote there) is an error of the store, never contention: a caller that
// took it for contention would wait for a release that never comes.
func (f Factory) testWrongTypeIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	client := f.Client(t, srv)
	ctx := ctxFor(t, 10*time.Second)
	for _, replicated := range []bool{false, true} {
		var opts []redisstore.Option
		if replicated {
			opts = append(opts, redisstore.WithWaitReplicas(1, 10*time.Millisecond))
		}
		s := f.On(t, client, append(opts, redisstore.WithPrefix("wt:"))...)
		if err := srv.Do("LPUSH", "wt:{r}", "x").Error(); err != nil {
			t.Fatal(err)
		}
		check := func(call string, err error) {
			t.Helper()
			if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("%s (replicated %v) on a list = %v; want a WRONGTYPE error, not a lock outcome", call, replicated, err)
			}
		}
		check("Acquire", s.Acquire(ctx, "r", "tok", time.Second))
		_, err := s.AcquireFenced(ctx, "r", "tok", time.Second)
		check("AcquireFenced", err)
		check("Release", s.Release(ctx, "r", "tok"))
		check("Extend", s.Extend(ctx, "r", "tok", time.Second))
		_, _, err = s.Holder(ctx, "r")
		check("Holder", err)
		_, err = s.ForceRelease(ctx, "r") // deleting it would destroy another program's data
		check("ForceRelease", err)
		for name, l := range map[string]lock.Locker{"single": mustLocker(t, s), "multi": mustMulti(t, s)} {
			_, err := l.TryLock(ctx, "r", time.Second)
			if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("%s TryLock (replicated %v) on a list = %v; want ErrUnavailable, not ErrNotAcquired", name, replicated, err)
			}
		}
		if typ, err := srv.Do("TYPE", "wt:{r}").ToString(); err != nil || typ != "list" {
			t.Errorf("TYPE after the calls = %q, %v; want the list untouched", typ, err)
		}
		if err := srv.Do("DEL", "wt:{r}", "wt:{r}:fence").Error(); err != nil {
			t.Fatal(err)
		}
	}
}

func mustLocker(t *testing.T, s lock.Store) lock.Locker {
	t.Helper()
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// mustMulti makes a MultiLocker of s alone: it takes locks with plain
// Acquire, where the single locker uses AcquireFenced.
func mustMulti(t *testing.T, s lock.Store) lock.Locker {
	t.Helper()
	l, err := lock.NewMulti([]lock.Store{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
