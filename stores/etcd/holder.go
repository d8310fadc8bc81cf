package etcd

import (
	"context"
	"fmt"

	"github.com/lockkit/lock"
)

var _ lock.HolderReader = (*Store)(nil)

// Holder implements [lock.HolderReader] with one linearizable read of the
// resource's scope: the public part of the holder's token (lock.HolderOf), or
// false if the key is gone (released, or its lease expired).
func (s *Store) Holder(ctx context.Context, resource string) (string, bool, error) {
	ctx, cancel, err := s.begin(ctx, resource, "-")
	if err != nil {
		return "", false, err
	}
	defer cancel()
	scope := s.scope(resource)
	kv, err := s.holder(ctx, scope)
	switch {
	case err != nil:
		return "", false, s.fail(ctx, "holder", err)
	case kv == nil:
		return "", false, nil
	case kv.Lease == 0:
		return "", false, fmt.Errorf("etcd: holder: key %q has no lease: not a lock of this package", kv.Key)
	}
	return lock.HolderOf(tokenOf(scope, kv.Key)), true, nil
}
