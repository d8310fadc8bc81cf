package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

// A ForceRelease whose every conditional delete finds the lock's key
// changed since it read it (the holder extending, say) cannot tell
// whether the resource was held: it was, each time. It reports an
// error, not "not held", and the lock is left to its holder.
func TestForceReleaseOfAKeyChangingEveryTimeIsAnError(t *testing.T) {
	endpoints := etcdtest.Shared(t).Endpoints()
	raw := clientOf(t, endpoints...)
	scope := fmt.Sprintf("force-busy%d/", prefixes.Add(1))
	prefix := etcd.WithPrefix(scope)
	holder := newStore(t, raw, prefix)
	ctx := ctxFor(t, 30*time.Second)
	if err := holder.Acquire(ctx, "r", "tok", 10*time.Second); err != nil {
		t.Fatalf("Acquire(r) = %v", err)
	}
	t.Cleanup(func() { _ = holder.Release(ctx, "r", "tok") })
	var key string
	admin := newStore(t, hookedClient(t, func(method string) {
		if method == "/etcdserverpb.KV/Txn" && key != "" {
			// Rewrite the key in place: same value, same lease, a new
			// revision, as the holder's extension would.
			if _, err := raw.Put(ctx, key, "", clientv3.WithIgnoreValue(), clientv3.WithIgnoreLease()); err != nil {
				t.Errorf("rewriting the lock's key: %v", err)
			}
		}
	}, endpoints...), prefix)
	resp, err := raw.Get(ctx, scope, clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the lock's key = %v, %v; want one key", resp, err)
	}
	key = string(resp.Kvs[0].Key)
	if held, err := admin.ForceRelease(ctx, "r"); err == nil {
		t.Errorf("ForceRelease(r) while its key changed before each delete = %v, nil; want an error (it was held each time)", held)
	}
	if ok, err := holder.Exists(ctx, "r"); !ok || err != nil {
		t.Errorf("Exists(r) after the ForceRelease = %v, %v; want the holder's lock still there", ok, err)
	}
}
