package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Lead's own bad input names Lead, as every locker error names the call
// that failed (doc of Error.Op), not the Campaign it makes.
func TestElectionLeadNilContextNamesLead(t *testing.T) {
	e := mustElection(t, mustSingle(t, newCounting("c"), nil), "leader", time.Second)
	var nilCtx context.Context // nil: the bad input under test
	err := e.Lead(nilCtx, func(context.Context, *lock.Term) error { return nil })
	wantError(t, "Lead(nil, fn)", err, "lead", "leader", lock.ErrInvalid)
}

// NewElection refuses, before anything is sent, a role or a ttl that the
// locker's Lock would refuse on every Campaign: a role its store cannot
// hold (ResourceValidator), a ttl that leaves no room for Options.LockDelay
// under MaxTTL; over a Semaphore of one permit as over its locker.
func TestNewElectionRefusesWhatEveryCampaignWould(t *testing.T) {
	c := newCounting("picky")
	picked := mustSingle(t, picky{c}, nil)
	delayed := mustSingle(t, c, &lock.Options{LockDelay: 100 * 24 * time.Hour})
	for _, tc := range []struct {
		name   string
		locker lock.Locker
		role   string
		ttl    time.Duration
	}{
		{"a role the store refuses", picked, "much-too-long", time.Second},
		{"a ttl past MaxTTL with the lock delay", delayed, "leader", 300 * 24 * time.Hour},
		{"a Semaphore of 1, a role the store refuses", mustSemaphore(t, picked, 1), "much-too-long", time.Second},
		{"a Semaphore of 1, a ttl past MaxTTL with the lock delay", mustSemaphore(t, delayed, 1), "leader", 300 * 24 * time.Hour},
	} {
		e, err := lock.NewElection(tc.locker, tc.role, tc.ttl)
		if !errors.Is(err, lock.ErrInvalid) || e != nil {
			t.Errorf("NewElection(%s) = %v, %v; want nil, an error matching ErrInvalid", tc.name, e, err)
			continue
		}
		wantError(t, "NewElection("+tc.name+")", err, "election", tc.role, lock.ErrInvalid)
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("%d store calls after NewElection with bad input; want none", n)
	}
	// What the locker accepts, NewElection accepts.
	mustElection(t, picked, "short", time.Second)
	mustElection(t, delayed, "leader", time.Hour)
}

// An election elects one leader at a time: NewElection refuses, before
// anything is sent, a locker that lets several holders in at once (a
// Semaphore of more than one permit, a read-write lock's reader side),
// under which every campaigner would be elected.
func TestNewElectionRefusesSharedLockers(t *testing.T) {
	c := newCounting("c")
	l := mustSingle(t, c, nil)
	two, err := lock.NewSemaphore(l, 2)
	wantNil(t, "NewSemaphore(2)", err)
	one, err := lock.NewSemaphore(l, 1)
	wantNil(t, "NewSemaphore(1)", err)
	rw, err := lock.NewRWLocker(l)
	wantNil(t, "NewRWLocker", err)
	for name, shared := range map[string]lock.Locker{"a Semaphore of 2": two, "a reader side": rw.Reader()} {
		e, err := lock.NewElection(shared, "leader", time.Second)
		if !errors.Is(err, lock.ErrInvalid) || e != nil {
			t.Errorf("NewElection(%s) = %v, %v; want nil, an error matching ErrInvalid", name, e, err)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Errorf("%d store calls after NewElection over shared lockers; want none", n)
	}
	for name, exclusive := range map[string]lock.Locker{"a Semaphore of 1": one, "a writer side": rw.Writer()} {
		e := mustElection(t, exclusive, "leader", time.Second)
		term, err := e.Campaign(t.Context())
		wantNil(t, name+": Campaign()", err)
		wantNil(t, name+": Resign()", term.Resign(t.Context()))
	}
}

// Leader's failures name leader, the call that failed, not the Holder or
// IsLocked call it made, and keep their causes.
func TestElectionLeaderErrorNamesLeader(t *testing.T) {
	m := memory.New()
	m.Inject(memory.Fault{Err: errConnReset, Times: memory.Always})
	for _, l := range []lock.Locker{mustSingle(t, m, nil), mustSingle(t, basic{m}, nil)} {
		_, err := mustElection(t, l, "role", time.Minute).Leader(t.Context())
		wantIs(t, "Leader() with the store failing", err, errConnReset)
		var le *lock.Error
		if !errors.As(err, &le) || le.Op != "leader" || le.Resource != "role" {
			t.Errorf("Leader() with the store failing = %v; want a *lock.Error of op leader on role", err)
		}
	}
}

// Exclusive tells the lockers that let several holders in at once from
// those of one holder at a time.
func TestExclusive(t *testing.T) {
	base, err := lock.NewSingle(memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sem, _ := lock.NewSemaphore(base, 3)
	one, _ := lock.NewSemaphore(base, 1)
	rw, _ := lock.NewRWLocker(base)
	for _, c := range []struct {
		name string
		l    lock.Locker
		want bool
	}{
		{"a SingleLocker", base, true},
		{"a Semaphore of 3", sem, false},
		{"a Semaphore of 1", one, true},
		{"a reader side", rw.Reader(), false},
		{"a writer side", rw.Writer(), true},
		{"a zero RWLocker's writer side", new(lock.RWLocker).Writer(), true},
		{"a zero RWLocker's reader side", new(lock.RWLocker).Reader(), false},
		{"a nil *Semaphore", (*lock.Semaphore)(nil), true},
	} {
		if got := lock.Exclusive(c.l); got != c.want {
			t.Errorf("Exclusive(%s) = %v; want %v", c.name, got, c.want)
		}
	}
}

// An election's ExtendEvery past its term is refused with the term's
// length, named as such: the message called it the lock's validity, the
// ttl less the drift allowance, which is a tenth longer.
func TestElectionExtendEveryPastTheTermNamesTheTerm(t *testing.T) {
	l := mustSingle(t, memory.New(), nil)
	_, err := lock.NewElection(l, "r", time.Second, lock.ExtendEvery(950*time.Millisecond))
	if !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewElection(ttl 1s, ExtendEvery(950ms)) = %v; want ErrInvalid", err)
	}
	// The validity: 1s less 1s×0.01 and 2ms of drift allowance, 988ms;
	// the term: that less a tenth.
	const term = "889.2ms"
	if msg := err.Error(); !strings.Contains(msg, "want less than a term ("+term+":") {
		t.Errorf("NewElection(ttl 1s, ExtendEvery(950ms)) = %q; want it to name the term, %v", msg, term)
	}
}
