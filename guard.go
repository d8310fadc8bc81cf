package lock

import (
	"fmt"
	"sync"
)

// FenceGuard is the resource side of fencing, in process: it remembers,
// for each key, the highest fence it has let write, and refuses a write
// whose fence is lower — the write of a holder whose lock expired while it
// was paused and that a later holder has taken since. The zero value is
// ready to use; a FenceGuard must not be copied after first use.
//
// It protects what lives in the same process (a file, a cache, an
// in-memory ledger). A resource elsewhere makes the same check itself, in
// the same step as the write: in SQL,
//
//	UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence <= $2
//
// and a write that affects no row was stale (use fence < $2 if each lock
// writes once). See the examples.
//
// It remembers one fence per key for its whole life, in memory: its
// memory grows with the keys it has seen, and it forgets them all when
// the process ends. A resource that outlives the process (a file) and
// takes writes from holders that outlive it too (other processes, which
// send their fences with their writes) must keep the fence of its last
// write with it, as the row does in SQL: a guard of a new process would
// let a stale write through. The fences given for one key must come from
// locks on one resource taken over the same stores: fences of other
// resources or stores need not be ordered with them.
type FenceGuard struct {
	mu   sync.Mutex
	keys map[string]*guardedKey
}

type guardedKey struct {
	mu      sync.Mutex // held while a write runs
	highest uint64
}

// Do runs write if fence is at least the highest fence Do has let write to
// key, and records fence as the highest; otherwise it returns an error
// matching ErrStaleFence and does not run write. Writes to one key run one
// at a time, so that no write with a lower fence can land after one with a
// higher fence; write must therefore not call Do for the same key, which
// would wait for it for ever. A fence of 0 (a lock without fencing), a
// nil write and a nil *FenceGuard are refused with an error matching
// ErrInvalid, and nothing is recorded. Do returns write's error.
func (g *FenceGuard) Do(key string, fence uint64, write func() error) error {
	switch {
	case g == nil:
		return fmt.Errorf("%w: nil *FenceGuard", ErrInvalid)
	case fence == 0:
		return fmt.Errorf("%w: fence 0: the lock carries no fence", ErrInvalid)
	case write == nil:
		return fmt.Errorf("%w: nil write function", ErrInvalid)
	}
	g.mu.Lock()
	k := g.keys[key]
	if k == nil {
		if g.keys == nil {
			g.keys = make(map[string]*guardedKey)
		}
		k = &guardedKey{}
		g.keys[key] = k
	}
	g.mu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if fence < k.highest {
		return fmt.Errorf("%w: fence %d for %q, which a holder with fence %d wrote since", ErrStaleFence, fence, key, k.highest)
	}
	k.highest = fence
	return write()
}
