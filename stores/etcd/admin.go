package etcd

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// ForceRelease deletes the lock on resource whoever holds it — its key,
// if unchanged since ForceRelease read it, and then its lease — and
// reports whether it was held. It is meant for administrative tools
// (lockctl release --force), not applications: the holder is not told,
// and may go on working. It never revokes a lease before the deletion
// of its key: the holder's store may release the lock meanwhile and lend
// the lease to another of its locks. A key that changes between the read
// and the deletion every time, three times in a row, is reported as an
// error: the lock was held, and is left as it is.
func (s *Store) ForceRelease(ctx context.Context, resource string) (bool, error) {
	ctx, cancel, err := s.begin(ctx, resource, "-")
	if err != nil {
		return false, err
	}
	defer cancel()
	return s.deleteHolder(ctx, "force release", s.scope(resource), func(*mvccpb.KeyValue) bool { return true })
}

// LastFence returns the fence of the lock that holds resource — the last
// fence handed out for it, as the next holder's will be greater — and
// false if resource is free: a released lock's key is gone, and etcd's
// history of it may be compacted. It is meant for administrative tools
// (lockctl status).
func (s *Store) LastFence(ctx context.Context, resource string) (uint64, bool, error) {
	ctx, cancel, err := s.begin(ctx, resource, "-")
	if err != nil {
		return 0, false, err
	}
	defer cancel()
	kv, err := s.holder(ctx, s.scope(resource))
	if err != nil || kv == nil {
		return 0, false, s.fail(ctx, "last fence", err)
	}
	return uint64(kv.CreateRevision), true, nil
}
