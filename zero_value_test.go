package lock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// wantNotMade fails unless err matches ErrInvalid and names what was not
// made by its constructor.
func wantNotMade(t *testing.T, call string, err error, what string) {
	t.Helper()
	wantIs(t, call, err, lock.ErrInvalid)
	if !strings.Contains(err.Error(), what) {
		t.Errorf("%s = %v; want it to say %q", call, err, what)
	}
}

// A zero Election, or a nil one, refuses every call with ErrInvalid
// instead of panicking.
func TestZeroElectionIsRefused(t *testing.T) {
	ctx := t.Context()
	for name, e := range map[string]*lock.Election{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			if r := e.Role(); r != "" {
				t.Errorf("Role() = %q; want \"\"", r)
			}
			term, err := e.Campaign(ctx)
			wantNotMade(t, "Campaign()", err, "Election not made by NewElection")
			if term != nil {
				t.Errorf("Campaign() term = %v; want nil", term)
			}
			ran := false
			err = e.Lead(ctx, func(context.Context, *lock.Term) error { ran = true; return nil })
			wantNotMade(t, "Lead()", err, "Election not made by NewElection")
			if ran {
				t.Error("Lead() ran its function; want it refused")
			}
			ld, err := e.Leader(ctx)
			wantNotMade(t, "Leader()", err, "Election not made by NewElection")
			if ld.Elected {
				t.Errorf("Leader() = %+v; want not elected", ld)
			}
		})
	}
}

// A zero Term, or a nil one, is a term that was never held: its context
// has ended (with a cause matching ErrInvalid), its lock is not valid,
// and Resign refuses it with ErrInvalid.
func TestZeroTermIsNotHeld(t *testing.T) {
	for name, term := range map[string]*lock.Term{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			ctx := term.Context()
			if ctx == nil || ctx.Err() == nil {
				t.Fatalf("Context() of a term never held = %v; want an ended context", ctx)
			}
			<-ctx.Done()
			wantNotMade(t, "context.Cause(Context())", context.Cause(ctx), "Term not made by Campaign")
			if l := term.Lock(); l.Valid() || l != (lock.Lock{}) {
				t.Errorf("Lock() = %+v; want the zero Lock", l)
			}
			if !term.ValidUntil().IsZero() {
				t.Errorf("ValidUntil() = %v; want the zero time", term.ValidUntil())
			}
			if f := term.Fence(); f != 0 {
				t.Errorf("Fence() = %d; want 0", f)
			}
			wantNotMade(t, "Resign()", term.Resign(t.Context()), "Term not made by Campaign")
		})
	}
}

// Run, RunOnce and NewElection refuse a zero locker of the package with
// ErrInvalid, naming its constructor, before anything is sent.
func TestRunRefusesAZeroLocker(t *testing.T) {
	fn := func(context.Context, lock.Lock) error {
		t.Error("fn ran over a zero locker")
		return nil
	}
	for _, tc := range []struct {
		l    lock.Locker
		what string
	}{
		{&lock.SingleLocker{}, "not made by NewSingle"},
		{&lock.MultiLocker{}, "not made by NewMulti"},
		{&lock.Semaphore{}, "not made by NewSemaphore"},
	} {
		name := fmt.Sprintf("%T", tc.l)
		t.Run(name, func(t *testing.T) {
			wantNotMade(t, "Run(zero "+name+")", lock.Run(t.Context(), tc.l, "r", time.Second, fn), tc.what)
			wantNotMade(t, "RunOnce(zero "+name+")", lock.RunOnce(t.Context(), tc.l, "r", time.Second, fn), tc.what)
			e, err := lock.NewElection(tc.l, "r", time.Second)
			wantNotMade(t, "NewElection(zero "+name+")", err, tc.what)
			if e != nil {
				t.Errorf("NewElection(zero %s) = %v; want nil", name, e)
			}
		})
	}
}
