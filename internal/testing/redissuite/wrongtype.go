package redissuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// A lock key holding another type of value (a list or hash some other
// program wrote there, with an expiry or without) is an error of the
// store, never contention: a caller that took it for contention would
// wait for a release that never comes. Every call that reads the lock
// says so, the queries (Exists, TTL, Holder) and WaitRelease included.
func (f Factory) testWrongTypeIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	client := f.Client(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	others := []wrongValue{
		{"a list", "list", []string{"LPUSH", "wt:{r}", "x"}, false},
		{"a hash with an expiry", "hash", []string{"HSET", "wt:{r}", "f", "x"}, true},
	}
	for _, replicated := range []bool{false, true} {
		for _, other := range others {
			testWrongType(t, ctx, f, client, srv, other, replicated)
		}
	}
}

// testWrongType checks every call of a store on a lock key that holds
// other.
func testWrongType(t *testing.T, ctx context.Context, f Factory, client any, srv *redistest.Server, other wrongValue, replicated bool) {
	var opts []redisstore.Option
	if replicated {
		opts = append(opts, redisstore.WithWaitReplicas(1, 10*time.Millisecond))
	}
	s := f.On(t, client, append(opts, redisstore.WithPrefix("wt:"))...)
	if err := srv.Do(other.write...).Error(); err != nil {
		t.Fatal(err)
	}
	if other.expires {
		if err := srv.Do("PEXPIRE", "wt:{r}", "60000").Error(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(call, got string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("%s (replicated %v) on %s = %s%v; want a WRONGTYPE error, not a lock outcome", call, replicated, other.what, got, err)
		}
	}
	held, err := s.Exists(ctx, "r")
	check("Exists(r)", fmt.Sprintf("%v, ", held), err)
	ttl, held, err := s.TTL(ctx, "r")
	check("TTL(r)", fmt.Sprintf("%v, %v, ", ttl, held), err)
	// A wait for it would never end: it is an error at once. (The
	// deadline only ends a wait that takes it for a lock.)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	check("WaitRelease(r)", "", s.WaitRelease(wctx, "r"))
	cancel()
	check("Acquire(r, tok)", "", s.Acquire(ctx, "r", "tok", time.Second))
	_, err = s.AcquireFenced(ctx, "r", "tok", time.Second)
	check("AcquireFenced(r, tok)", "", err)
	check("Release(r, tok)", "", s.Release(ctx, "r", "tok"))
	check("Extend(r, tok)", "", s.Extend(ctx, "r", "tok", time.Second))
	_, _, err = s.Holder(ctx, "r")
	check("Holder(r)", "", err)
	_, err = s.ForceRelease(ctx, "r") // deleting it would destroy another program's data
	check("ForceRelease(r)", "", err)
	for name, l := range map[string]lock.Locker{"single": mustLocker(t, s), "multi": mustMulti(t, s)} {
		_, err := l.TryLock(ctx, "r", time.Second)
		if !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("%s TryLock(r) (replicated %v) on %s = %v; want ErrUnavailable, not ErrNotAcquired", name, replicated, other.what, err)
		}
	}
	if got, err := srv.Do("TYPE", "wt:{r}").ToString(); err != nil || got != other.typ {
		t.Errorf("TYPE after the calls on %s = %q, %v; want the %s untouched", other.what, got, err, other.typ)
	}
	if err := srv.Do("DEL", "wt:{r}", "wt:{r}:fence").Error(); err != nil {
		t.Fatal(err)
	}
}

// wrongValue is a value of another type than a lock's at a lock key.
type wrongValue struct {
	what    string   // for messages
	typ     string   // its TYPE
	write   []string // the command that writes it
	expires bool     // whether it is given an expiry
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
