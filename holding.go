package lock

import (
	"context"
	"strings"
	"sync"
	"weak"
)

// The Runs, RunOnces and election terms under way, by the lock each
// holds, so that UnlockAll and Shutdown, which release the lock under
// them, end their contexts first: a holder that checks its context before
// each action never acts once another may hold the lock.
var keepers struct {
	mu       sync.Mutex
	m        map[heldKey][]*keeper
	starting map[*starting]struct{}
}

// heldKey identifies a lock across extensions.
type heldKey struct{ resource, token string }

// starting is a holder of resource from before its Lock call until its
// keeper is recorded (watch). A lock is the locker's as soon as Lock
// takes it, so UnlockAll and Shutdown may release it before its keeper
// can be found and ended: they record in every holder of the resource
// starting meanwhile what they released of it (the resource, or a name
// derived from it: resource~permitN, ~limit, ~read, ~write, and so on),
// and watch ends the keeper at once if its lock is among it.
type starting struct {
	resource string
	released []released
}

// released is a lock of c (weak: a locker shut down is not kept
// reachable by the record) that op (UnlockAll, Shutdown) released; err
// is what its holders' cause wraps.
type released struct {
	c      weak.Pointer[core]
	target heldKey
	fence  uint64
	op     string
	err    error
}

// startHolding records a holder of resource about to call Lock of locker.
// It must then call watch (through hold) with the lock it took, and
// abandon in any case. A Locker of another package may take its lock
// under any name: its holder records every release.
func startHolding(locker Locker, resource string) *starting {
	s := &starting{resource: resource}
	if !ours(locker) {
		s.resource = ""
	}
	keepers.mu.Lock()
	if keepers.starting == nil {
		keepers.starting = make(map[*starting]struct{})
	}
	keepers.starting[s] = struct{}{}
	keepers.mu.Unlock()
	return s
}

// abandon ends the record of a holder whose Lock failed (or panicked);
// once watch ended it, it does nothing.
func (s *starting) abandon() {
	keepers.mu.Lock()
	delete(keepers.starting, s)
	keepers.mu.Unlock()
}

// watch records k as keeping l, the lock the holder took, until the
// returned function is called, and ends the record of the holder
// starting. If UnlockAll or Shutdown released l (or what l stands for)
// in the meantime, k loses it at once: the holder's context is born
// ended. ctx is for the hook's EventLost.
func (s *starting) watch(ctx context.Context, l Lock, k *keeper) (unwatch func()) {
	key := heldKey{l.Resource, l.Token}
	keepers.mu.Lock()
	delete(keepers.starting, s)
	var gone *released
	for i, r := range s.released {
		// A lock with another fence is another lock (fixed tokens, as in
		// tests): one released before this one was taken.
		if r.fence != 0 && l.Fence != 0 && r.fence != l.Fence {
			continue
		}
		var match bool
		if c := r.c.Value(); c != nil {
			match = k.keeps(key, r.target, c)
		} else {
			// Collected: not the locker of ours that k's locker is (it
			// would keep it), but perhaps one a Locker of another package
			// made for the call.
			match = key == r.target && mayBeOf(k.locker, nil)
		}
		if match {
			gone = &s.released[i]
			break
		}
	}
	if gone == nil {
		if keepers.m == nil {
			keepers.m = make(map[heldKey][]*keeper)
		}
		keepers.m[key] = append(keepers.m[key], k)
	}
	keepers.mu.Unlock()
	if gone != nil {
		// Lost already: not recorded, for no UnlockAll need find it.
		k.released.Store(true)
		k.lose(ctx, "released by the locker's "+gone.op, gone.err)
		return func() {}
	}
	return func() {
		keepers.mu.Lock()
		defer keepers.mu.Unlock()
		ks := keepers.m[key]
		for i, x := range ks {
			if x == k {
				ks = append(ks[:i], ks[i+1:]...)
				break
			}
		}
		if len(ks) == 0 {
			delete(keepers.m, key)
		} else {
			keepers.m[key] = ks
		}
	}
}

// endKeepers ends the contexts of the holders keeping l, a lock of c,
// before op ("UnlockAll", "Shutdown") releases it; err is what the cause
// wraps. They include the holders of locks that stand for l: a
// semaphore's permit whose slot l is, a read-write lock's side whose mark
// l is. A holder keeping a lock of another of our lockers under the same
// resource and token (a fixed token, as in tests) is not ended. Each is
// marked released, also if it was done already: its own release then
// finds the lock not held, and that is no failure. The holders starting
// (see starting) are told too.
func endKeepers(ctx context.Context, c *core, l Lock, op string, err error) {
	target := heldKey{l.Resource, l.Token}
	keepers.mu.Lock()
	for s := range keepers.starting {
		if s.resource == "" || target.resource == s.resource || strings.HasPrefix(target.resource, s.resource+"~") {
			s.released = append(s.released, released{c: weak.Make(c), target: target, fence: l.Fence, op: op, err: err})
		}
	}
	var ks []*keeper
	for key, held := range keepers.m {
		for _, k := range held {
			if k.keeps(key, target, c) {
				ks = append(ks, k)
			}
		}
	}
	keepers.mu.Unlock()
	for _, k := range ks {
		k.released.Store(true)
		k.lose(ctx, "released by the locker's "+op, err)
	}
}

// keeps reports whether k, keeping the lock key, keeps target, a lock of
// c: the same lock of c's, or one that stands for it.
func (k *keeper) keeps(key, target heldKey, c *core) bool {
	if key == target {
		return mayBeOf(k.locker, c)
	}
	return standsFor(k.locker, Lock{Resource: key.resource, Token: key.token}, target, c)
}

// ours reports whether locker is one of this package's, which takes its
// locks under the resource's name or names derived from it.
func ours(locker Locker) bool {
	switch locker.(type) {
	case *SingleLocker, *MultiLocker, *Semaphore, *rwSide:
		return true
	}
	return false
}

// mayBeOf reports whether locker may take its locks with c: it is c's
// locker, or a Locker of another package (a wrapper of ours, say), which
// cannot tell.
func mayBeOf(locker Locker, c *core) bool {
	switch x := locker.(type) {
	case *SingleLocker:
		return &x.core == c
	case *MultiLocker:
		return &x.core == c
	}
	return true
}

// stander is a Locker whose locks stand for locks of another Locker on
// derived names (a semaphore of plain locks, a read-write lock's side).
type stander interface {
	// markOf returns the Locker and the lock that l stands for, if it
	// stands for one.
	markOf(l Lock) (Locker, Lock, bool)
}

// standsFor reports whether l, a lock of locker, stands for the lock
// target of c, directly or through derived lockers in turn.
func standsFor(locker Locker, l Lock, target heldKey, c *core) bool {
	for {
		s, ok := locker.(stander)
		if !ok {
			return false
		}
		if locker, l, ok = s.markOf(l); !ok {
			return false
		}
		if (heldKey{l.Resource, l.Token}) == target {
			return mayBeOf(locker, c)
		}
	}
}
