package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
)

var (
	_ lock.Permitter    = (*Store)(nil)
	_ lock.PermitWaiter = (*Store)(nil)
)

// The scripts of permits, each run after lua/permit_prelude.lua (the
// server's clock, expired permits removed); each file says what its
// script does, with its KEYS, ARGV and reply.
var (
	// permitAcquireScript takes a permit, with a fence.
	permitAcquireScript = load("permit_acquire")
	// permitReleaseScript frees a permit and wakes the first waiter.
	permitReleaseScript = load("permit_release")
	// permitExtendScript is compare-and-extend for a permit.
	permitExtendScript = load("permit_extend")
	// permitCountScript counts the permits held.
	permitCountScript = load("permit_count")
	// permitWaitScript puts a subscription in line for a permit.
	permitWaitScript = load("permit_wait")
	// permitPassScript hands a wake nobody used to the next in line.
	permitPassScript = load("permit_pass")
)

// PermitsSuffix ends the key of a resource's permits: p{e}:permits, beside
// the lock p{e} in its hash slot but never equal to a lock's key (which
// ends with "}") or a waiters' queue (":waiters"). Its waiters' queue is
// p{e}:permits:waiters, and its subscriptions' channels follow from it
// (ChannelOf).
const PermitsSuffix = ":permits"

// PermitsKey returns the key of resource's permits under prefix: a sorted
// set of the holders' tokens scored by their expiry (server time, ms) and
// of the member "" scored by minus the limit (see lua/permit_acquire.lua).
func PermitsKey(prefix, resource string) string { return LockKey(prefix, resource) + PermitsSuffix }

// AcquirePermit implements [lock.Permitter] with one script, one round
// trip whatever the limit: it drops the expired permits, counts the
// others, adds the token scored by its expiry if fewer than limit are held,
// and takes a fence from the counter locks use (so fences of permits
// increase as those of locks do: see the package documentation), lifted to
// the server's clock when behind it. The restart guard and
// WithWaitReplicas apply as to locks.
func (s *Store) AcquirePermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
	if err := s.checkPermit(ctx, resource, token, limit, ttl); err != nil {
		return 0, err
	}
	key := s.permitsKey(resource)
	if err := s.handoffs.yield(ctx, key); err != nil {
		return 0, err
	}
	cmd := s.permitCmd(key, token, limit, ttl)
	if s.replicas > 0 {
		return s.acquirePermitReplicated(ctx, limit, cmd)
	}
	return s.permitted(ctx, &cmd, limit, s.run(ctx, cmd))
}

// checkPermit is check, and a limit of at least 1.
func (s *Store) checkPermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	if limit < 1 || int64(limit) > 1<<53 {
		return fmt.Errorf("%w: limit is %d: want 1 to 2^53 permits", lock.ErrInvalid, limit)
	}
	return nil
}

// permitsKey returns the key of resource's permits.
func (s *Store) permitsKey(resource string) string { return PermitsKey(s.prefix, resource) }

// permitCmd returns the acquisition of a permit at key.
func (s *Store) permitCmd(key, token string, limit int, ttl time.Duration) Cmd {
	if s.guard > 0 {
		return script(permitAcquireScript, []string{key, s.counterKey(key), GuardKey}, token, itoa(int64(limit)), s.ttlArg(ttl), s.guardArg, liftAheadArg)
	}
	return script(permitAcquireScript, []string{key, s.counterKey(key)}, token, itoa(int64(limit)), s.ttlArg(ttl), "0", liftAheadArg)
}

// permitted returns the outcome of acquire, a permitCmd asked with limit,
// whose reply is r.
func (s *Store) permitted(ctx context.Context, acquire *Cmd, limit int, r Reply) (uint64, error) {
	key := acquire.Keys[0]
	switch n := r.Int; {
	case r.serverErr("WRONGTYPE"):
		return 0, s.permitsWrongType(key)
	case r.Err != nil:
		return 0, s.failed(ctx, r.Err)
	case r.Str != "":
		return 0, fmt.Errorf("%w: %s: the permits held on %q were taken with limit %s; this call asks for limit %d", lock.ErrLimitMismatch, s.kind, key, r.Str, limit)
	case n < 0:
		return 0, fmt.Errorf("%w (for another %v)", ErrRecovering, time.Duration(-n)*time.Millisecond)
	case n == 0 && r.Resent:
		return s.resentPermit(ctx, acquire)
	case n == 0:
		return 0, lock.ErrNotAcquired
	}
	hub.acquired(s, key)
	return uint64(r.Int), nil
}

// resentPermit returns the outcome of acquire, refused after the client
// sent it more than once (see Reply.Resent): if its token holds a permit,
// the first send took it, and its fence was lost with its answer, so it
// takes a new one while the permit is held (extended to the TTL asked
// for, from now); otherwise nothing was taken.
func (s *Store) resentPermit(ctx context.Context, acquire *Cmd) (uint64, error) {
	key, token, ttl := acquire.Keys[0], acquire.Args[0], acquire.Args[2]
	r := s.eval(ctx, permitExtendScript, []string{key}, token, ttl)
	switch {
	case r.Err != nil:
		return 0, s.failed(ctx, r.Err)
	case r.Int == 0:
		return 0, lock.ErrNotAcquired
	}
	hub.acquired(s, key)
	return s.lift(ctx, s.counterKey(key), 0)
}

// permitsWrongType is the error of a permits key that holds a value no
// permit script wrote: an error of the store, never contention.
func (s *Store) permitsWrongType(key string) error {
	return fmt.Errorf("%s: WRONGTYPE: permits key %q holds a value that is not a set of permits", s.kind, key)
}

// acquirePermitReplicated is AcquirePermit followed by WAIT on the same
// connection, in one round trip, as acquireReplicated does for locks.
func (s *Store) acquirePermitReplicated(ctx context.Context, limit int, cmd Cmd) (uint64, error) {
	b := batches.Get().(*batch)
	defer batches.Put(b)
	b.cmds[0] = cmd
	b.cmds[1] = s.waitReplicasCmd()
	for {
		s.client.DoMulti(ctx, b.cmds[:2], b.replies[:2], true)
		if !b.replies[0].noScript() || b.cmds[0].Full {
			break
		}
		b.cmds[0].Full = true
	}
	fence, err := s.permitted(ctx, &b.cmds[0], limit, b.replies[0])
	if err != nil {
		return 0, err
	}
	if b.replies[0].Resent {
		// The WAIT followed the last send, which may have written
		// nothing; it says nothing of an earlier one.
		err = fmt.Errorf("%w: the client sent the permit's acquisition more than once, and the replication of the first is unknown", ErrNotReplicated)
	} else if err = s.replicated(b.replies[1]); err == nil {
		return fence, nil
	}
	key := cmd.Keys[0]
	return 0, s.undo(ctx, err, script(permitReleaseScript, []string{key, WaitersOf(key)}, cmd.Args[0]))
}

// ReleasePermit implements [lock.Permitter]: one script, which frees the
// permit held under token, deletes the key with the last permit, and
// wakes the first caller waiting for a permit (see WaitPermit).
func (s *Store) ReleasePermit(ctx context.Context, resource, token string) error {
	if err := s.check(ctx, resource, token, 1); err != nil {
		return err
	}
	key := s.permitsKey(resource)
	start := time.Now()
	r := s.eval(ctx, permitReleaseScript, []string{key, WaitersOf(key)}, token)
	if r.serverErr("WRONGTYPE") {
		return s.permitsWrongType(key)
	}
	return s.released(ctx, key, start, r)
}

// ExtendPermit implements [lock.Permitter]: one compare-and-extend script.
// It is idempotent, so a resent ExtendPermit is no ambiguity.
func (s *Store) ExtendPermit(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	key := s.permitsKey(resource)
	r := s.eval(ctx, permitExtendScript, []string{key}, token, s.ttlArg(ttl))
	if r.serverErr("WRONGTYPE") {
		return s.permitsWrongType(key)
	}
	return s.extended(ctx, r)
}

// Permits implements [lock.Permitter]: a script that removes the expired
// permits, by the server's clock, and counts the others.
func (s *Store) Permits(ctx context.Context, resource string) (int, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return 0, err
	}
	key := s.permitsKey(resource)
	r := s.eval(ctx, permitCountScript, []string{key})
	switch {
	case r.serverErr("WRONGTYPE"):
		return 0, s.permitsWrongType(key)
	case r.Err != nil:
		return 0, s.failed(ctx, r.Err)
	}
	return int(r.Int), nil
}

// WaitPermit implements [lock.PermitWaiter] as WaitRelease does for a
// lock: it returns at once if fewer permits are held than their limit, and
// otherwise gets in line on the server and blocks until a ReleasePermit
// wakes it (each release wakes one waiter across every process: the first
// in line), the first permit expires (it then looks again; and it looks
// again now and then, in case a permit now expires sooner), or ctx ends.
// A waiter that finds a permit being handed to a waiter ahead of it gets
// in line behind it, as for a lock.
// It returns nil when a permit may be free: the caller still has to take
// it, and may find it taken. Sharded pub/sub needs Redis 7; on older
// servers it returns an error matching errors.ErrUnsupported.
func (s *Store) WaitPermit(ctx context.Context, resource string) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	return s.wait(ctx, s.permitsKey(resource), permitWait)
}

var permitWait = &waitFor{
	look: func(key string) Cmd {
		return script(permitWaitScript, []string{key, WaitersOf(key)}, "", queueMargin, "0")
	},
	wait:      permitWaitScript,
	pass:      permitPassScript,
	wrongType: (*Store).permitsWrongType,
}
