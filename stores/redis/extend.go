package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
)

// Extend implements [lock.Extender]: a compare-and-extend script, one
// round trip.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	n, err := s.eval(ctx, &extendScript, s.lockKey(resource), "", token, s.ttlArg(ttl), "").AsInt64()
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// TTL implements [lock.TTLReader] with PTTL (millisecond precision).
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, false, err
	}
	key := s.lockKey(resource)
	ms, err := s.pttl(ctx, key)
	switch {
	case err != nil:
		return 0, false, s.failed(ctx, err)
	case ms == -2:
		return 0, false, nil
	case ms < 0:
		return 0, false, fmt.Errorf("redis: key %q has no TTL: it is not a lock of this store", key)
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// pttl returns PTTL of key: milliseconds left, -2 if absent, -1 if it has
// no TTL. See read for how it is sent.
func (s *Store) pttl(ctx context.Context, key string) (int64, error) {
	return s.read(ctx, "PTTL", key)
}

// pttlWaiting is pttl for WaitRelease: see doQueued.
func (s *Store) pttlWaiting(ctx context.Context, key string) (int64, error) {
	return s.doQueued(ctx, func() rueidis.Completed { return s.client.B().Arbitrary("PTTL").Keys(key).Build() }).AsInt64()
}

// read runs a one-key read command that answers an integer. It is built
// as a plain command, not as the client's read-only one, so that the
// client neither retries it (a Store makes one attempt per call, and a
// retried read would block until ctx ends while a server is down) nor
// sends it to a replica when the client is set up to read from replicas
// (a replica may not yet have the latest lock state).
func (s *Store) read(ctx context.Context, cmd, key string) (int64, error) {
	return s.do(ctx, func() rueidis.Completed { return s.client.B().Arbitrary(cmd).Keys(key).Build() }).AsInt64()
}
