package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

// ErrNotReplicated reports that a lock was granted but fewer replicas than
// WithWaitReplicas asks for confirmed it in time, so the store released it
// again. It wraps lock.ErrUnavailable: the store could not provide a lock
// that survives a failover, and whether the release went through is not
// certain (the lockers release by token once more).
var ErrNotReplicated = fmt.Errorf("redis: lock not confirmed by enough replicas: %w", lock.ErrUnavailable)

// acquireReplicated acquires — fenced or not — and runs WAIT right after
// it, on a connection of its own (Client.DoMulti with exclusive), in one
// round trip: WAIT counts the writes of the connection it runs on.
func (s *Store) acquireReplicated(ctx context.Context, fenced bool, key, token string, ttl time.Duration) (uint64, error) {
	b := batches.Get().(*batch)
	defer batches.Put(b)
	n := 1
	if fenced {
		n = s.fencedCmds((*[3]Cmd)(b.cmds[:3]), false, key, token, ttl)
	} else {
		b.cmds[0] = s.setNX(key, token, ttl)
	}
	b.cmds[n] = s.waitReplicasCmd()
	s.client.DoMulti(ctx, b.cmds[:n+1], b.replies[:n+1], true)
	r := b.replies[:n+1]
	acquired, waited := r[0], r[n]

	var fence uint64
	var err error
	if fenced {
		fence, err = s.fenced(ctx, b.cmds[:n], ttl, r[:n])
	} else {
		err = s.acquired(ctx, &b.cmds[0], acquired)
	}
	if err != nil {
		return 0, err
	}
	ours := acquired.Str == token // GET answered our token: an earlier send took it
	if b.cmds[0].NArgs != 5 {
		ours = acquired.Nil // without GET, refused but ours
	}
	if ours {
		// Taken by an earlier send (see refused): the WAIT followed a
		// send that wrote nothing, and says nothing of the earlier one.
		err = fmt.Errorf("%w: the lock was taken by an earlier send of the acquisition, whose replication is unknown", ErrNotReplicated)
	} else if err = s.replicated(waited); err == nil {
		return fence, nil
	}
	return 0, s.undo(ctx, err, s.releaseCmd(key, WaitersOf(key), token))
}

// waitReplicasCmd returns the WAIT that follows a replicated acquisition.
func (s *Store) waitReplicasCmd() Cmd {
	return command("WAIT", nil, itoa(int64(s.replicas)), itoa(Millis(s.replicaTimeout)))
}

// replicated returns nil if waited, the reply to waitReplicasCmd, says
// enough replicas confirmed the acquisition, and an error wrapping
// ErrNotReplicated otherwise.
func (s *Store) replicated(waited Reply) error {
	switch {
	case waited.Err != nil:
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, waited.Err)
	case waited.Int < int64(s.replicas):
		return fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, waited.Int, s.replicas, s.replicaTimeout)
	}
	return nil
}

// undo runs release, the release script of an acquisition that failed
// with err after it was granted, even if ctx has just ended, and returns
// err, with release's failure if any.
func (s *Store) undo(ctx context.Context, err error, release Cmd) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(s.replicaTimeout, time.Second))
	defer cancel()
	if r := s.run(rctx, release); r.Err != nil {
		err = fmt.Errorf("%w; releasing it failed: %w", err, r.Err)
	}
	return s.failed(ctx, err)
}
