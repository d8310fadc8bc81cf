package lock

import (
	"context"
	"sync"
)

// The Runs, RunOnces and election terms under way, by the lock each
// holds, so that UnlockAll and Shutdown, which release the lock under
// them, end their contexts first: a holder that checks its context before
// each action never acts once another may hold the lock.
var keepers struct {
	mu sync.Mutex
	m  map[heldKey][]*keeper
}

// heldKey identifies a lock across extensions.
type heldKey struct{ resource, token string }

// watch records k as keeping l, until the returned function is called.
func watch(l Lock, k *keeper) (unwatch func()) {
	key := heldKey{l.Resource, l.Token}
	keepers.mu.Lock()
	if keepers.m == nil {
		keepers.m = make(map[heldKey][]*keeper)
	}
	keepers.m[key] = append(keepers.m[key], k)
	keepers.mu.Unlock()
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
// resource and token (a fixed token, as in tests) is not ended.
func endKeepers(ctx context.Context, c *core, l Lock, op string, err error) {
	target := heldKey{l.Resource, l.Token}
	keepers.mu.Lock()
	var ks []*keeper
	for key, held := range keepers.m {
		for _, k := range held {
			if key == target && mayBeOf(k.locker, c) ||
				key != target && standsFor(k.locker, Lock{Resource: key.resource, Token: key.token}, target, c) {
				ks = append(ks, k)
			}
		}
	}
	keepers.mu.Unlock()
	for _, k := range ks {
		k.lose(ctx, "released by the locker's "+op, err)
	}
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
