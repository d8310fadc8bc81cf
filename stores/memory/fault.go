package memory

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Op is a set of store operations, for Fault.Ops.
type Op uint8

// The operations of a Store.
const (
	OpAcquire Op = 1 << iota // Acquire and AcquireFenced
	OpRelease
	OpExtend
	OpExists
	OpTTL
	OpWait       // WaitRelease
	OpRaiseFence // RaiseFence
)

// Fault describes how the next calls of a Store misbehave.
type Fault struct {
	// Ops selects the operations affected; zero means all of them.
	Ops Op
	// Delay blocks each affected call this long before it proceeds (or
	// until its context ends: the call then returns the context's error
	// and has no effect).
	Delay time.Duration
	// Err is returned by each affected call. Unless AfterApply is set, the
	// call has no effect.
	Err error
	// AfterApply makes an affected call take effect and then return Err:
	// a reply lost on its way back, the outcome a caller cannot tell.
	AfterApply bool
	// Times is the number of calls affected: zero means one, Always means
	// every call until ClearFaults.
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

// take returns the fault for a call of op, if any, counting the call.
func (fs *faults) take(op Op) *Fault {
	if fs.active.Load() == 0 {
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
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
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
