package contention_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/stores/memory"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want contention.Outcome
	}{
		{nil, contention.OK},
		{lock.ErrNotAcquired, contention.Refused},
		{fmt.Errorf("lock: lock %q: %w", "r", lock.ErrNotAcquired), contention.Refused},
		{lock.ErrNotHeld, contention.NotHeld},
		{lock.ErrUnavailable, contention.Unknown},
		{context.DeadlineExceeded, contention.Unknown},
		{context.Canceled, contention.Unknown},
		// A timeout after contention is still unknown, never refused: an
		// attempt may have been under way.
		{fmt.Errorf("%w (last attempt: %w)", context.DeadlineExceeded, lock.ErrNotAcquired), contention.Unknown},
		{errors.Join(lock.ErrUnavailable, lock.ErrNotHeld), contention.Unknown},
		{errors.New("connection reset by peer"), contention.Unknown},
	} {
		if got := contention.Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The recording locker records every call with its outcome, times and the
// validity and fence the library reported.
func TestRecorderLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := memory.New()
		rec := contention.NewRecorder()
		inner, err := lock.NewSingle(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := rec.Locker(7, inner)
		const ttl = 100 * time.Millisecond

		held, err := l.Lock(ctx, "r", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryLock(ctx, "r", ttl); !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("TryLock of a held resource: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
		held, err = l.Extend(ctx, held, ttl)
		if err != nil {
			t.Fatal(err)
		}
		store.Inject(memory.Fault{Ops: memory.OpAcquire, Err: errors.New("i/o timeout")})
		if _, err := l.TryLock(ctx, "s", ttl); err == nil {
			t.Fatal("TryLock succeeded despite the injected fault")
		}
		store.Expire("r")
		if err := l.Unlock(ctx, held); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("Unlock of an expired lock: %v", err)
		}

		ops := rec.Ops()
		want := []struct {
			kind    contention.Kind
			outcome contention.Outcome
		}{
			{contention.KindAcquire, contention.OK},
			{contention.KindAcquire, contention.Refused},
			{contention.KindExtend, contention.OK},
			{contention.KindAcquire, contention.Unknown},
			{contention.KindRelease, contention.NotHeld},
		}
		if len(ops) != len(want) {
			t.Fatalf("recorded %d ops, want %d: %+v", len(ops), len(want), ops)
		}
		for i, w := range want {
			op := ops[i]
			if op.Kind != w.kind || op.Outcome != w.outcome || op.Client != 7 {
				t.Errorf("op %d = %v %v by client %d, want %v %v by client 7", i, op.Kind, op.Outcome, op.Client, w.kind, w.outcome)
			}
		}
		if a := ops[0]; a.Token == "" || a.Fence == 0 || a.ValidUntil != ttl-ttl/100-2*time.Millisecond {
			t.Errorf("acquisition recorded token %q, fence %d, validity %v; want the lock's, valid until ttl−drift", a.Token, a.Fence, a.ValidUntil)
		}
		if e := ops[2]; e.Token != ops[0].Token || e.Start != 10*time.Millisecond || e.ValidUntil != e.Start+ttl-ttl/100-2*time.Millisecond {
			t.Errorf("extension recorded token %q at %v valid until %v", e.Token, e.Start, e.ValidUntil)
		}
		if r := ops[4]; r.Token != ops[0].Token || r.Err == nil {
			t.Errorf("release recorded token %q, err %v", r.Token, r.Err)
		}
	})
}

func TestRecorderFaultWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := contention.NewRecorder()
		time.Sleep(5 * time.Millisecond)
		healed := rec.Fault("pause")
		rec.Fault("kill") // never healed
		time.Sleep(10 * time.Millisecond)
		healed()
		healed() // idempotent
		ws := rec.Windows()
		want := []contention.Window{{Name: "pause", Start: 5 * time.Millisecond, End: 15 * time.Millisecond}, {Name: "kill", Start: 5 * time.Millisecond, End: -1}}
		if len(ws) != 2 || ws[0] != want[0] || ws[1] != want[1] {
			t.Errorf("windows = %+v, want %+v", ws, want)
		}
		rep := contention.Analyze("s", "b", rec)
		if !rep.HadFault || rep.Recovered {
			t.Errorf("an unhealed fault must leave the run unrecovered: %+v", rep)
		}
	})
}
