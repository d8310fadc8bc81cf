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

// endKeepers ends the contexts of the holders keeping l, before op
// ("UnlockAll", "Shutdown") releases it; err is what the cause wraps.
func endKeepers(ctx context.Context, l Lock, op string, err error) {
	keepers.mu.Lock()
	ks := append([]*keeper(nil), keepers.m[heldKey{l.Resource, l.Token}]...)
	keepers.mu.Unlock()
	for _, k := range ks {
		k.lose(ctx, "released by the locker's "+op, err)
	}
}
