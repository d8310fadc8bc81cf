package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/storecall"
)

// Store is the lock store over a Client. The adapters embed it: its
// exported methods are theirs. It is safe for concurrent use.
type Store struct {
	client  Client
	cluster bool
	kind    string // "redis" or "goredis", for errors
	config

	guardArg        string                      // the guard's maxTTL in ms
	lastTTL         atomic.Pointer[ttlArg]      // see ttlArg
	subOwner        any                         // whose subscriptions this store shares: see hub
	noShardedPubSub atomic.Bool                 // the server lacks SSUBSCRIBE: WaitRelease cannot work
	noExpireTime    atomic.Bool                 // a cluster's servers lack PEXPIRETIME (Redis < 7): every fence lifts
	noSetGet        atomic.Bool                 // the server refuses SET with NX and GET (Redis < 7)
	lastLift        atomic.Int64                // when this store last lifted the fence counter (Unix ns): see liftDue
	clock           atomic.Pointer[serverClock] // the server's clock at the last lift: see serverNow
	holdLifts       atomic.Bool                 // lift only when behind: see HoldLifts
	pipe            pipeline                    // calls started with Start
	maxSenders      int                         // batches of started calls in flight at once: see Batcher
	handoffs        handoffs                    // resources this store just released to a waiter
	acquiring       atomic.Int32                // Acquire and AcquireFenced calls under way: see soloAcquisitions
	shareAll        atomic.Bool                 // every acquisition shares: see ShareBatches
	batchGate       atomic.Pointer[hold]        // holds batches of started calls: see HoldBatches
	reservationArg  string                      // how long a release reserves a lock for the woken waiter, in ms
	extendLoaded    atomic.Bool                 // a queued acquisition loaded the extend script: see loadExtend
}

var (
	_ lock.Store             = (*Store)(nil)
	_ lock.Extender          = (*Store)(nil)
	_ lock.TTLReader         = (*Store)(nil)
	_ lock.FenceRaiser       = (*Store)(nil)
	_ lock.Waiter            = (*Store)(nil)
	_ lock.ResourceValidator = (*Store)(nil)
	_ lock.Starter           = (*Store)(nil)
)

// New returns a store over client. kind names the adapter in errors
// ("redis", "goredis"); defaultName is the store's name unless WithName
// gives one; owner is what stores share subscriptions by (the adapter's
// client, if comparable; see hub), or nil for none.
func New(client Client, kind, defaultName string, owner any, opts []Option) (*Store, error) {
	c, err := configure(client.Cluster(), opts)
	if err != nil {
		return nil, err
	}
	s := &Store{client: client, cluster: client.Cluster(), kind: kind, config: c, guardArg: itoa(Millis(c.guard)), reservationArg: reservationTTLArg}
	if s.name == "" {
		s.name = defaultName
	}
	s.maxSenders = 1
	if b, ok := client.(Batcher); ok {
		s.maxSenders = max(1, b.MaxBatches())
	}
	if p, ok := client.(NilAverse); ok && p.NilAverse() {
		s.noSetGet.Store(true)
	}
	s.subOwner = owner
	if owner == nil {
		s.subOwner = s
	}
	return s, nil
}

// String returns the store's name: see WithName.
func (s *Store) String() string { return s.name }

// Acquire implements [lock.Store] with SET NX PX GET: one round trip,
// whose answer also tells a lock held by another (its token) from a key
// of another type (a WRONGTYPE error). Without GET (Redis before 7.0, or
// a NilAverse client), a refusal is read with a GET afterwards. Under
// load, on one server, without the restart guard or WithWaitReplicas,
// acquisitions go out in shared batches (see soloAcquisitions).
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.check(ctx, resource, token, ttl); err != nil {
		return err
	}
	key := s.lockKey(resource)
	if err := s.handoffs.yield(ctx, key); err != nil {
		return err
	}
	if s.guard > 0 {
		_, err := s.acquireGuarded(ctx, false, key, token, ttl)
		return err
	}
	if s.replicas == 0 {
		defer s.acquiring.Add(-1)
		if s.shares(s.acquiring.Add(1)) {
			_, err := s.acquireShared(ctx, lock.CallAcquire, resource, key, token, ttl)
			return err
		}
	}
	for {
		var err error
		if s.replicas > 0 {
			_, err = s.acquireReplicated(ctx, false, key, token, ttl)
		} else {
			cmd := s.take(key, token, ttl)
			err = s.acquired(ctx, &cmd, s.run(ctx, cmd))
		}
		if err != errNoSetGet {
			return err
		}
	}
}

// setNX returns SET key token NX PX ttl GET, or without GET on a server
// that does not take both NX and GET (Redis before 7.0).
func (s *Store) setNX(key, token string, ttl time.Duration) Cmd {
	if s.noSetGet.Load() {
		return cmd1("SET", key, token, "NX", "PX", s.ttlArg(ttl))
	}
	return cmd1("SET", key, token, "NX", "PX", s.ttlArg(ttl), "GET")
}

// errNoSetGet reports that the server refused SET with both NX and GET,
// which ran nothing: send the acquisition again, without GET.
var errNoSetGet = errors.New("the server does not take SET with both NX and GET")

// acquired returns the outcome of set, a SET NX of setNX or the claim
// script of take, whose reply is r. With GET (and from the claim), the
// reply is nil if the lock was free (and is now taken) and the holder's
// token otherwise; a key of another type is a WRONGTYPE error. Without
// GET, a refusal is followed by a GET (see refused).
func (s *Store) acquired(ctx context.Context, set *Cmd, r Reply) error {
	key, token, get := set.Keys[0], set.Args[0], set.NArgs == 5 || set.Script != nil
	var err error
	switch {
	case get && r.serverErr("ERR syntax error"):
		s.noSetGet.Store(true)
		return errNoSetGet
	case r.serverErr("WRONGTYPE"):
		err = s.wrongType(key)
	case r.Err != nil:
		s.unclaimed(set) // no answer says it took the reservation, or not
		err = s.failed(ctx, r.Err)
	case !get && r.Nil:
		err = s.refused(ctx, key, token, r.Resent)
	case get && !r.Nil && !(r.Resent && r.Str == token):
		// Held, and not by an earlier send of this command (see
		// Reply.Resent).
		err = lock.ErrNotAcquired
	}
	if err == nil {
		hub.acquired(s, key)
	}
	return err
}

// wrongType is the error of a lock key that holds another type of value:
// a key no lock store wrote, which is not contention and would never be
// freed by a release.
func (s *Store) wrongType(key string) error {
	return fmt.Errorf("%s: WRONGTYPE: lock key %q holds a value that is not a lock", s.kind, key)
}

// refused returns the error of a SET NX without GET that found key taken,
// reading the key with GET — one more round trip, on the refusal path
// only: lock.ErrNotAcquired if it holds a lock (or has expired since); nil
// if the command was resent and the lock holds token (the first send took
// it: see Reply.Resent); and a WRONGTYPE error if it holds another type of
// value.
func (s *Store) refused(ctx context.Context, key, token string, resent bool) error {
	r := s.do(ctx, cmd1("GET", key))
	switch {
	case r.Nil:
		return lock.ErrNotAcquired
	case r.serverErr("WRONGTYPE"):
		return s.wrongType(key)
	case r.Err != nil:
		return s.failed(ctx, r.Err)
	case resent && r.Str == token:
		return nil
	}
	return lock.ErrNotAcquired
}

// Release implements [lock.Store]: a compare-and-delete script, one round
// trip, that also wakes the first waiter in line and hands it the lock
// (see WaitRelease and ReservationPrefix; under the restart guard or
// WithWaitReplicas, only a queued acquisition is handed it).
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := s.check(ctx, resource, token, 1); err != nil {
		return err
	}
	lockKey, waitersKey := LockAndWaiters(s.prefix, resource)
	var start time.Time // a reservation needs no head start: see handoffs
	if !s.reserves() {
		start = time.Now()
	}
	return s.released(ctx, lockKey, start, s.run(ctx, s.releaseCmd(lockKey, waitersKey, token)))
}

// released returns the outcome of the release script on lockKey, sent at
// start, and records a release to a waiter (see handoffs) unless start is
// zero.
func (s *Store) released(ctx context.Context, lockKey string, start time.Time, r Reply) error {
	switch {
	case r.Err != nil:
		return s.failed(ctx, r.Err)
	case r.Int == 0 && r.Resent:
		return fmt.Errorf("release of %q: %w; the lock is not held under the token now", lockKey, errUnknownOutcome)
	case r.Int == 0:
		return lock.ErrNotHeld
	case r.Int == 2 && !start.IsZero():
		s.handoffs.record(lockKey, start)
	}
	return nil
}

// Exists implements [lock.Store] with TYPE, which costs what EXISTS does:
// a string is a lock (or a reservation of one), no key is no lock, and a
// key of another type is a WRONGTYPE error, as in Acquire and Holder
// (EXISTS would report it held, a lock nobody will ever release).
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return false, err
	}
	key := s.lockKey(resource)
	r := s.do(ctx, cmd1("TYPE", key))
	switch {
	case r.Err != nil:
		return false, s.failed(ctx, r.Err)
	case r.Str == "none":
		return false, nil
	case r.Str == "string":
		return true, nil
	}
	return false, s.wrongType(key)
}

// ValidateResource implements [lock.ResourceValidator]: every non-empty
// name of at most MaxResourceLen bytes is accepted, whatever its bytes
// (braces, NUL, invalid UTF-8 included).
func (s *Store) ValidateResource(resource string) error {
	return ValidateResource(s.kind, resource)
}

// lockKey returns the key of resource's lock.
func (s *Store) lockKey(resource string) string { return LockKey(s.prefix, resource) }

// check validates the arguments of a call and its context, before
// anything is sent: a nil context, an empty token, a non-positive TTL, a
// TTL above the restart guard's maxTTL or a resource ValidateResource
// refuses is an error wrapping lock.ErrInvalid; a context that has ended
// returns its error.
func (s *Store) check(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := storecall.Check(ctx, token, ttl); err != nil {
		return err
	}
	if s.guard > 0 && ttl > s.guard {
		return fmt.Errorf("%w: ttl is %v, above the restart guard's maximum TTL %v (WithRestartGuard): such a lock would outlive the guard", lock.ErrInvalid, ttl, s.guard)
	}
	return ValidateResource(s.kind, resource)
}

// failed returns the error of a call that did not get a clear answer: the
// context's error if it ended (the client's error may be a bare context
// error, or a connection error caused by it), wrapping the client's error
// too, and the client's error otherwise. Either way the outcome is
// unknown, and it is never lock.ErrNotAcquired or lock.ErrNotHeld. A
// deadline that has passed counts as ended: a client's socket deadline
// can fire a moment before ctx reports it.
func (s *Store) failed(ctx context.Context, err error) error { return storecall.Failed(ctx, err) }

// errUnknownOutcome reports a command that the client sent more than once
// and whose outcome the last answer cannot tell.
var errUnknownOutcome = errors.New("the client sent the command more than once (it retried after an error), and the last answer cannot tell what the first did")

// ErrUnknownOutcome is errUnknownOutcome, for tests.
var ErrUnknownOutcome = errUnknownOutcome

// do sends cmd, and sends it again if it never left the process (see
// Client.NotSent).
func (s *Store) do(ctx context.Context, cmd Cmd) Reply {
	r := s.client.Do(ctx, cmd)
	for range maxResends {
		if r.Err == nil || !s.client.NotSent(ctx, r.Err) {
			break
		}
		r = s.client.Do(ctx, cmd)
	}
	return r
}

// maxResends bounds how many times a command that never left is sent
// again.
const maxResends = 3

// eval runs sc by its SHA-1 and, if the server answers NOSCRIPT, in full.
func (s *Store) eval(ctx context.Context, sc *Script, keys []string, args ...string) Reply {
	return s.run(ctx, script(sc, keys, args...))
}

// run sends cmd, a script, again in full if the server does not know it.
func (s *Store) run(ctx context.Context, cmd Cmd) Reply {
	r := s.do(ctx, cmd)
	if r.noScript() {
		cmd.Full = true
		r = s.do(ctx, cmd)
	}
	return r
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Millis converts a duration to whole milliseconds, rounding up: a lock
// may live a fraction of a millisecond longer than asked, never shorter,
// so the validity the lockers compute is never overstated. It does not
// overflow: the longest Duration (a "forever" TTL) is 9223372036855ms,
// where d + 999999ns would wrap to a negative TTL, which SET refuses and
// PEXPIRE takes as "delete now".
func Millis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}

// ttlArg is a TTL in milliseconds as a command argument.
type ttlArg struct {
	ttl time.Duration
	arg string
}

// ttlArg returns ttl in whole milliseconds as a string, remembering the
// last one: callers mostly use one TTL, so this saves an allocation per
// call.
func (s *Store) ttlArg(ttl time.Duration) string {
	if last := s.lastTTL.Load(); last != nil && last.ttl == ttl {
		return last.arg
	}
	a := &ttlArg{ttl: ttl, arg: itoa(Millis(ttl))}
	s.lastTTL.Store(a)
	return a.arg
}

// WithoutRedis7 makes s speak as it does to a server older than Redis
// 7.0, which has neither PEXPIRETIME nor SET with both NX and GET: for
// tests, on a server that has them.
func WithoutRedis7(s *Store) {
	s.noSetGet.Store(true)
	s.noExpireTime.Store(s.cluster) // one server needs no PEXPIRETIME
}
