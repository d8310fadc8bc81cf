package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Op is a set of store operations, for Fault.Ops.
type Op uint8

// The operations of a Store.
const (
	OpAcquire    Op = 1 << iota // Acquire, AcquireFenced and AcquirePermit
	OpRelease                   // Release and ReleasePermit
	OpExtend                    // Extend and ExtendPermit
	OpExists                    // Exists and Permits
	OpTTL                       // TTL and Holder
	OpWait                      // WaitRelease and WaitPermit
	OpRaiseFence                // RaiseFence
)

var opNames = [...]string{"acquire", "release", "extend", "exists", "ttl", "wait", "raisefence"}

// String names the operations of o, such as "acquire|release"; "0" for
// none (as Fault.Ops, all of them).
func (o Op) String() string {
	if o == 0 {
		return "0"
	}
	var b strings.Builder
	for i, name := range opNames {
		if o&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := o &^ (1<<len(opNames) - 1); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "Op(%#x)", uint8(rest))
	}
	return b.String()
}

// Fault describes how the next calls of a Store misbehave.
type Fault struct {
	// Ops selects the operations affected; zero means all of them.
	Ops Op
	// Delay blocks each affected call this long before it proceeds (or
	// until its context ends: the call then returns the context's error
	// and, unless InFlight is set, has no effect). A context that ends
	// at the very instant the Delay passes does not stop the call.
	Delay time.Duration
	// Err is returned by each affected call. Unless AfterApply is set, the
	// call has no effect.
	Err error
	// AfterApply makes an affected call take effect and then return Err:
	// a reply lost on its way back, the outcome a caller cannot tell.
	// (WaitRelease and WaitPermit return Err without waiting, as without
	// it.)
	AfterApply bool
	// InFlight makes a delayed call behave as a request already on its
	// way to a server: when the call's context ends during the Delay, the
	// call returns the context's error at once but still takes effect
	// once the Delay has passed (in a goroutine of its own), unless Err is
	// set without AfterApply. It lets a test check that a caller who gave
	// up cleans up after a request that lands late.
	InFlight bool
	// Times is the number of calls affected: zero means one, Always (or
	// any other negative number) means every call until ClearFaults.
	Times int
}

// Always, as Fault.Times, affects every call until ClearFaults.
const Always = -1

// Inject adds a fault. Faults apply in the order injected: a call takes the
// first fault that matches its operation and still has calls left.
func (s *Store) Inject(f Fault) {
	if f.Times == 0 {
		f.Times = 1
	}
	s.faults.mu.Lock()
	s.faults.list = append(s.faults.list, &f)
	s.faults.active.Store(int32(len(s.faults.list)))
	s.faults.mu.Unlock()
}

// ClearFaults removes every injected fault.
func (s *Store) ClearFaults() {
	s.faults.mu.Lock()
	s.faults.list = nil
	s.faults.active.Store(0)
	s.faults.mu.Unlock()
}

type faults struct {
	active atomic.Int32 // len(list), read without the mutex on every call
	mu     sync.Mutex
	list   []*Fault
}

// injected reports whether any fault is injected.
func (fs *faults) injected() bool { return fs.active.Load() != 0 }

// take returns the fault for a call of op, if any, counting the call.
func (fs *faults) take(op Op) *Fault {
	if !fs.injected() {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if f.Ops != 0 && f.Ops&op == 0 {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				fs.list = append(fs.list[:i:i], fs.list[i+1:]...)
				fs.active.Store(int32(len(fs.list)))
			}
		}
		c := *f
		return &c
	}
	return nil
}

// before applies the part of a fault that comes before the operation: the
// delay, and the error of a fault that prevents the operation. It returns
// the fault, for after.
func (fs *faults) before(ctx context.Context, op Op) (*Fault, error) {
	f := fs.take(op)
	if f == nil {
		return nil, nil
	}
	if f.Delay > 0 {
		lands := time.Now().Add(f.Delay)
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// A context that ends at the instant the delay passes (on a
			// synctest bubble's clock, both channels are ready at once)
			// does not stop the call: the outcome does not depend on
			// which one the select picked.
			if time.Now().Before(lands) {
				refused := f.Err != nil && !f.AfterApply // the server would not apply it
				if f.InFlight && !refused && op&(OpAcquire|OpRelease|OpExtend|OpRaiseFence) != 0 {
					return nil, errInFlight{lands: lands, err: ctx.Err()}
				}
				return nil, ctx.Err()
			}
		}
	}
	if f.Err != nil && !f.AfterApply {
		return nil, f.Err
	}
	return f, nil
}

// after returns what a call that took effect returns: err, unless the fault
// loses the reply.
func (f *Fault) after(err error) error {
	if f != nil && f.AfterApply && f.Err != nil {
		return f.Err
	}
	return err
}

// errInFlight is what before returns for an InFlight call whose context
// ended: the call's error, and when the call takes effect.
type errInFlight struct {
	lands time.Time
	err   error
}

func (e errInFlight) Error() string { return e.err.Error() }

// landLate makes apply run when an InFlight call whose context ended takes
// effect, if err (from before) says so, and returns the error for the
// caller. A timer waits, not a goroutine, so a testing/synctest bubble may
// end first.
func landLate(err error, apply func()) error {
	if e, ok := err.(errInFlight); ok {
		time.AfterFunc(time.Until(e.lands), apply)
		return e.err
	}
	return err
}
