package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/ctxend"
	"github.com/lockkit/lock/internal/storecall"
)

// Store is a lock store on an etcd cluster. The zero value is not usable;
// call New. A Store is safe for concurrent use.
type Store struct {
	client *clientv3.Client
	// leases calls the lease API without the retries of the client's
	// Lease, which resends a grant or a revocation whose answer was lost:
	// a resent revocation would report a lock it released as not held.
	leases  pb.LeaseClient
	prefix  string
	name    string
	minTTL  atomic.Int64  // whole seconds; raised when the cluster grants longer leases than asked
	min     time.Duration // as given to WithMinTTL, checked by New
	timeout time.Duration
	slackOf func(secs int64) int64
	waitMax int64 // the longest lease of a key waiting in line, in whole seconds (see waitLease)
	hub     hub
	pool    pool
	renewer renewer
}

var (
	_ lock.Store     = (*Store)(nil)
	_ lock.Extender  = (*Store)(nil)
	_ lock.TTLReader = (*Store)(nil)
	_ lock.Fencer    = (*Store)(nil)
	_ lock.Waiter    = (*Store)(nil)
	_ lock.Granular  = (*Store)(nil)
)

// DefaultPrefix is the key prefix of a Store made without WithPrefix.
const DefaultPrefix = "lock/"

// DefaultMinTTL is the minimum TTL of a Store made without WithMinTTL,
// which TTLs rounded up to whole seconds may not be below: the shortest
// lease etcd grants with its default election timeout of one second (1.5
// election timeouts, rounded up to whole seconds).
const DefaultMinTTL = 2 * time.Second

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key the store writes; the default
// is DefaultPrefix. Give each application sharing a cluster its own
// prefix: two stores share no keys as long as neither prefix is a prefix
// of the other.
func WithPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// WithName names the store in String, and so in the errors of the
// lockers; the default is "etcd". The name may not be empty.
func WithName(name string) Option { return func(s *Store) { s.name = name } }

// WithMinTTL sets the shortest TTL the store accepts, in whole seconds
// (at least one, and at most etcd's longest lease, clientv3.MaxLeaseTTL
// seconds); the default is DefaultMinTTL. Set it to the shortest
// lease the cluster grants — 1.5 times its election timeout, rounded up
// to whole seconds — when that is shorter than the default. A TTL that,
// rounded up to whole seconds, is below it is refused with
// lock.ErrInvalid before anything is sent. If the
// cluster turns out to grant longer leases than asked, the store refuses
// that TTL too, and every shorter one from then on.
func WithMinTTL(d time.Duration) Option { return func(s *Store) { s.min = d } }

// WithTimeout bounds every call of the store (all the requests it makes
// to etcd for one Acquire, Release, Extend, Exists, TTL, Holder,
// LastFence, ForceRelease or Close, the read that starts a WaitRelease,
// and each request of an AcquireQueued, whose wait in line its Wait
// bounds) by d, within the caller's context; the
// default is no bound but the context. A leader that dies loses the
// writes it was replicating: etcd answers them only when its own request
// timeout runs out (5s plus two election timeouts), so without a bound a
// call can hang that long, where a new leader is elected in about two
// election timeouts. A call the bound ends returns an error that says so
// and does not match context.DeadlineExceeded, as the caller's context
// is still alive. Its outcome is unknown, as with any failed call.
func WithTimeout(d time.Duration) Option { return func(s *Store) { s.timeout = d } }

// WithoutLeaseSlack makes every lease last its lock's TTL, rounded up to
// whole seconds, and no more: the lock of a holder that died frees up to
// a tenth of its TTL sooner (see the package doc's TTLs), and every
// acquisition of a whole-second TTL that takes a kept lease renews it.
func WithoutLeaseSlack() Option { return func(s *Store) { s.slackOf = noSlack } }

func noSlack(int64) int64 { return 0 }

// New returns a store that keeps its locks in the etcd cluster client
// talks to. The caller owns client: the store never closes it. The
// client's zap logger reports the calls that fail and are retried; give
// it one that suits the application (Config.Logger).
//
// An invalid option gives an error wrapping lock.ErrInvalid that names
// it; nil options are ignored.
func New(client *clientv3.Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil etcd client", lock.ErrInvalid)
	}
	s := &Store{client: client, leases: pb.NewLeaseClient(client.ActiveConnection()), prefix: DefaultPrefix, name: "etcd", min: DefaultMinTTL, slackOf: slackOf, waitMax: waitLease}
	s.pool.max = DefaultIdleLeases
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	switch {
	case s.name == "":
		return nil, fmt.Errorf("%w: etcd.New: WithName(\"\"): the name may not be empty", lock.ErrInvalid)
	case s.min < time.Second || s.min%time.Second != 0:
		return nil, fmt.Errorf("%w: etcd.New: WithMinTTL(%v): want whole seconds, at least one (etcd's leases count whole seconds)", lock.ErrInvalid, s.min)
	case s.min > clientv3.MaxLeaseTTL*time.Second:
		return nil, fmt.Errorf("%w: etcd.New: WithMinTTL(%v): want at most etcd's longest lease, %ds: the store would refuse every TTL", lock.ErrInvalid, s.min, clientv3.MaxLeaseTTL)
	case s.timeout < 0:
		return nil, fmt.Errorf("%w: etcd.New: WithTimeout(%v): want >= 0", lock.ErrInvalid, s.timeout)
	case s.pool.max < 0:
		return nil, fmt.Errorf("%w: etcd.New: WithIdleLeases(%d): want >= 0", lock.ErrInvalid, s.pool.max)
	}
	s.minTTL.Store(int64(s.min / time.Second))
	s.hub.init(s)
	s.pool.init()
	s.renewer = renewer{leases: s.leases, client: client}
	return s, nil
}

// String returns the store's name.
func (s *Store) String() string { return s.name }

// MinTTL returns the store's minimum TTL, which TTLs rounded up to whole
// seconds may not be below: the one set with WithMinTTL, or a longer one
// the cluster turned out to require.
func (s *Store) MinTTL() time.Duration { return time.Duration(s.minTTL.Load()) * time.Second }

// TTLGranularity implements [lock.Granular]. It returns zero: a lease
// never expires before its TTL, counted by the leader from the moment it
// grants or renews the lease, which is after the caller's clock started
// (a new leader even adds an election timeout to every lease). TTLs are
// whole seconds, rounded up, and a lease lasts a tenth longer than its
// lock (in whole seconds, rounded down), so a lock may outlive its TTL by
// up to a second plus that tenth, plus the half second in which the
// leader notices expired leases; it never expires early.
func (s *Store) TTLGranularity() time.Duration { return 0 }

// The keys of the locks on a resource start with the resource's scope:
// the store's prefix, the resource's name with every NUL byte written as
// NUL 0x01, and two NUL bytes. A lock's key is its scope and its token,
// so that a key is its holder's alone: a release deletes it without
// reading it, and no two resources' scopes overlap, as an escaped name
// never holds two NUL bytes in a row nor ends with one.
const scopeEnd = "\x00\x00"

// scope returns the start of the keys of the locks on resource.
func (s *Store) scope(resource string) string {
	if strings.IndexByte(resource, 0) >= 0 {
		resource = strings.ReplaceAll(resource, "\x00", "\x00\x01")
	}
	return s.prefix + resource + scopeEnd
}

// key returns the key of the lock on resource held by token.
func (s *Store) key(resource, token string) string { return s.scope(resource) + token }

// tokenOf returns the token of the lock whose key is key, in scope.
func tokenOf(scope string, key []byte) string { return string(key[len(scope):]) }

// Acquire implements [lock.Store]: a lease of its own for the lock, and a
// transaction that puts the lock's key under that lease if no key of a
// lock on resource exists.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	_, err := s.acquire(ctx, resource, token, ttl)
	return err
}

// AcquireFenced implements [lock.Fencer]: the fence is the revision at
// which the lock's key was created, which etcd makes strictly greater
// than every revision before it, across leader changes and restarts.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	return s.acquire(ctx, resource, token, ttl)
}

func (s *Store) acquire(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	secs, err := s.seconds(ttl)
	if err != nil {
		return 0, err
	}
	ctx, cancel, err := s.begin(ctx, resource, token)
	if err != nil {
		return 0, err
	}
	defer cancel()
	scope, key := s.scope(resource), s.key(resource, token)
	if s.hub.held(scope) {
		// Callers of this store wait for the resource, and the last its
		// watch saw was a key in its scope: an attempt would likely find it held,
		// for a write. A linearizable read finds it held for one read, and
		// is a true answer: the key was held at a moment within this call.
		// A waiter woken by the key's deletion goes straight to the
		// transaction.
		kv, err := s.holder(ctx, scope)
		if err != nil {
			return 0, s.fail(ctx, "acquire", err)
		}
		if kv != nil {
			return 0, lock.ErrNotAcquired
		}
	}
	resp, l, err := s.putLeased(ctx, key, secs, ttl, func(l lease) clientv3.Txn {
		return s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(scope), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(key, strconv.FormatInt(wholeSeconds(ttl), 10), clientv3.WithLease(clientv3.LeaseID(l.id))))
	})
	if err != nil {
		return 0, err
	}
	s.pool.heads(l.id, key) // the only key of its scope
	return uint64(resp.Header.Revision), nil
}

// putLeased runs the transaction txn(l), which puts key, holding the
// lock's TTL, under the lease l if its comparisons hold: l is a kept
// lease of secs seconds, or a new one. A kept lease found gone costs a
// second attempt, with a new lease. It returns the transaction's answer
// and the lease, its expiry as the store knows it (see attach), or
// lock.ErrNotAcquired if the comparisons failed.
func (s *Store) putLeased(ctx context.Context, key string, secs int64, ttl time.Duration, txn func(l lease) clientv3.Txn) (*clientv3.TxnResponse, lease, error) {
	for fresh := false; ; fresh = true {
		start := time.Now()
		l, kept, renew := lease{}, false, false
		if !fresh {
			l, kept, renew = s.pool.take(key, secs, start, ttl)
		}
		if !kept {
			var err error
			if l, err = s.grant(ctx, key, secs, ttl); err != nil {
				return nil, lease{}, err
			}
		}
		resp, err := s.attach(ctx, key, l, renew, start, txn(l))
		if err == errLeaseGone && kept {
			continue // the kept lease expired: take a fresh one
		}
		if renew {
			l.expires = start.Add(time.Duration(l.secs) * time.Second)
		}
		return resp, l, err
	}
}

// errLeaseGone says that a transaction was refused, and so changed
// nothing, as the lease it named no longer exists.
var errLeaseGone = errors.New("etcd acquire: the lock's lease expired before its key was put")

// attach runs txn, which puts key under lease l if its comparisons hold
// (for Acquire: if no key in the resource's scope exists). A kept lease
// that etcd may expire within the lock's TTL (renew) is renewed by a
// keepalive sent along with the transaction: the lock's TTL then counts
// from the renewal, after start, and a keepalive is answered by the
// leader without a Raft write. The key is then put only if both
// succeed: a transaction applied while the lease lived attached the key
// to it, and the renewal kept the lease, and so the key, alive for a
// whole TTL. A lease not renewed is one the pool knows to live a whole
// TTL after start already. Comparisons that fail give
// lock.ErrNotAcquired, and the lease, which holds nothing, is kept.
func (s *Store) attach(ctx context.Context, key string, l lease, renew bool, start time.Time, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
	var renewed error
	var wg sync.WaitGroup
	if renew {
		wg.Go(func() { _, renewed = s.renewer.renew(ctx, l.id) })
	}
	resp, err := txn.Commit()
	wg.Wait()
	switch {
	case errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound):
		s.pool.forget(l.id, key)
		return nil, errLeaseGone
	case err != nil:
		// The key may have been put. Revoking the lease undoes whatever
		// the transaction did; if that fails too, the caller releases
		// by token.
		s.pool.forget(l.id, key)
		s.undo(ctx, l.id)
		return nil, s.fail(ctx, "acquire", err)
	case !resp.Succeeded:
		// The lease holds nothing: keep it for another lock, or revoke
		// it. A lease whose renewal failed is not kept: its expiry is
		// unknown. The outcome on the lock is certain either way.
		if renewed == nil {
			if renew {
				s.pool.renewed(l.id, l.secs, start)
			}
			s.drop(ctx, l.id, key)
		} else {
			s.pool.forget(l.id, key)
			_ = s.revoke(ctx, l.id)
		}
		return nil, lock.ErrNotAcquired
	case renewed != nil:
		// The key is put under a lease that may expire before the TTL,
		// or already has (a lease found gone took its key with it).
		// Revoking it deletes the key; if that fails, the caller
		// releases by token.
		s.pool.forget(l.id, key)
		s.undo(ctx, l.id)
		return nil, s.fail(ctx, "acquire: renew the lease", renewed)
	}
	if renew {
		s.pool.renewed(l.id, l.secs, start)
	}
	s.pool.confirm(l.id, key)
	return resp, nil
}

// grant grants a lease of secs seconds with an ID of the store's choosing
// (so that a lost answer leaves no lease the store cannot name), checks
// that the cluster granted no more than asked, and lends it to the lock
// of key.
func (s *Store) grant(ctx context.Context, key string, secs int64, ttl time.Duration) (lease, error) {
	for range 2 {
		id := rand.Int64N(1<<63-1) + 1
		start := time.Now()
		resp, err := s.leases.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: secs}, waitForReady)
		if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseExist) {
			continue // another lease drew the same ID: draw again
		}
		if err != nil {
			return lease{}, s.fail(ctx, "grant a lease", err)
		}
		if resp.TTL > secs {
			// The cluster's minimum lease TTL is longer than the store's:
			// the lock would outlive its TTL.
			_ = s.revoke(ctx, id)
			raise(&s.minTTL, resp.TTL)
			return lease{}, fmt.Errorf("%w: ttl %v is below the cluster's minimum lease TTL of %ds", lock.ErrInvalid, ttl, resp.TTL)
		}
		l := lease{id: id, secs: secs, expires: start.Add(time.Duration(secs) * time.Second), key: key}
		s.pool.granted(l)
		return l, nil
	}
	return lease{}, errors.New("etcd: grant a lease: two random lease IDs were both taken")
}

// drop keeps the lease id, which was attached to the lock of key and
// holds no key now, for another lock, or revokes it if the store did not
// lend it or keeps enough (see pool.keep). If revoking fails, the lease
// expires by itself.
func (s *Store) drop(ctx context.Context, id int64, key string) {
	if s.pool.keep(id, key) {
		_ = s.revoke(ctx, id)
	}
}

// undo revokes the lease of an acquisition whose outcome is unknown,
// within ctx while it lasts, as the call's own work. If ctx has ended
// (usually why the outcome is unknown), or ends during the revocation,
// it is sent in the background on a context of its own, bounded by
// undoTimeout: revoked on ctx, it would never be sent. Once the lease is
// gone, a transaction still on its way fails (the lease is not found),
// and one applied already loses its key.
func (s *Store) undo(ctx context.Context, id int64) {
	if ctxend.Err(ctx) == nil {
		if err := s.revoke(ctx, id); err == nil || ctxend.Err(ctx) == nil {
			return // revoked, or failed for a reason of its own: the caller releases by token
		}
	}
	go func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
		_ = s.revoke(rctx, id)
	}()
}

// undoTimeout bounds the revocation of undo.
const undoTimeout = time.Second

// revoke revokes a lease, and so deletes the key attached to it.
func (s *Store) revoke(ctx context.Context, id int64) error {
	_, err := s.leases.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id}, waitForReady)
	return err
}

// waitForReady makes a lease call wait for a connection to the cluster
// (until its context ends), as the client's own calls do.
var waitForReady = grpc.WaitForReady(true)

// raise sets v to n if n is greater.
func raise(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// Release implements [lock.Store]: one deletion of the lock's key, which
// is token's alone, so that the deletion needs no condition. Where the
// store knows the key to head its line (it took the lock, or was handed
// it, or moved it to a new lease in an Extend), the deletion alone tells
// whether token held resource: a head holds the lock until its key is deleted. Otherwise (a
// lock taken through another store, or a key that waits in line) a
// transaction reads the head of the line along with the deletion, at the
// same revision, and token held resource if and only if its key was the
// head: a key that waited in line (see AcquireQueued) is deleted all the
// same, which takes it out of the line, and the answer is
// lock.ErrNotHeld. The lease the key was attached to
// holds nothing now: the store keeps it for another lock (see
// WithIdleLeases), or revokes it. The deletion reports that lease only for
// a lock whose lease the store does not know (another store took it); the
// lease the store knows may be one an Extend racing the Release moved the
// lock from, and the pool then keeps it only if no other lock took it
// meanwhile, and never revokes one that another lock took.
func (s *Store) Release(ctx context.Context, resource, token string) error {
	ctx, cancel, err := s.begin(ctx, resource, token)
	if err != nil {
		return err
	}
	defer cancel()
	scope, key := s.scope(resource), s.key(resource, token)
	if id, ok := s.pool.heading(key); ok {
		resp, err := s.client.Delete(ctx, key)
		switch {
		case err != nil:
			return s.fail(ctx, "release", err)
		case resp.Deleted == 0:
			return lock.ErrNotHeld
		}
		s.drop(ctx, id, key)
		return nil
	}
	id, known := s.pool.attachedTo(key)
	var opts []clientv3.OpOption
	if !known {
		opts = append(opts, clientv3.WithPrevKV())
	}
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(scope, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...),
		clientv3.OpDelete(key, opts...),
	).Commit()
	if err != nil {
		return s.fail(ctx, "release", err)
	}
	head, deleted := resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseDeleteRange()
	if deleted.Deleted == 0 {
		return lock.ErrNotHeld
	}
	for _, kv := range deleted.PrevKvs {
		id = kv.Lease
	}
	if id != 0 {
		s.drop(ctx, id, key)
	}
	if len(head.Kvs) == 0 || string(head.Kvs[0].Key) != key {
		return lock.ErrNotHeld // it waited in line: out of it now
	}
	return nil
}

// deleteHolder reads the key of the lock in scope and, if there is one
// and holds reports true for it, deletes it if it has not changed since
// that read, then revokes its lease; it reports whether it deleted it.
// The deletion is conditional, never a revocation of the lease read: the
// holder's store may release the lock meanwhile and lend its lease to
// another lock of its own, which revoking that lease would delete. A key
// that changed (an Extend with another TTL moves a lock to a new lease)
// is read again, a few times; if it changed every time, the answer is an
// error, not "not held".
func (s *Store) deleteHolder(ctx context.Context, op, scope string, holds func(*mvccpb.KeyValue) bool) (bool, error) {
	for range deleteAttempts {
		kv, err := s.holder(ctx, scope)
		switch {
		case err != nil:
			return false, s.fail(ctx, op, err)
		case kv == nil || !holds(kv):
			return false, nil
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).
			Commit()
		switch {
		case err != nil:
			return false, s.fail(ctx, op, err)
		case !resp.Succeeded:
			continue
		}
		// The key held the lease until its deletion, so no store lent
		// the lease to another lock: it holds nothing now. If revoking
		// it fails, it expires by itself.
		if kv.Lease != 0 {
			_ = s.revoke(ctx, kv.Lease)
		}
		return true, nil
	}
	// The key existed at every read, so "not held" would be false.
	return false, fmt.Errorf("etcd %s: the lock's key changed between the read and the delete %d times in a row: try again", op, deleteAttempts)
}

// deleteAttempts bounds the rounds of read and conditional delete of
// deleteHolder while the key keeps changing.
const deleteAttempts = 3

// Extend implements [lock.Extender]. It reads the head of the resource's
// line and, if it is the lock's key (token's own), renews the lease it is
// attached to: a token waiting in line (see AcquireQueued) does not hold
// the lock, and gets lock.ErrNotHeld. A lease
// keeps the TTL it was granted with, so extending with another TTL (in
// whole seconds) moves the lock to a new lease of that TTL, in a
// transaction that checks that the key is still attached to the old
// lease, and then drops the old one: four round trips instead of two.
// If another Extend of the lock moved it to a new lease meanwhile, it
// reads the key again and extends the lock on its new lease.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	secs, err := s.seconds(ttl)
	if err != nil {
		return err
	}
	ctx, cancel, err := s.begin(ctx, resource, token)
	if err != nil {
		return err
	}
	defer cancel()
	scope, key := s.scope(resource), s.key(resource, token)
	kv, err := s.lockOf(ctx, scope, key)
	for range moveAttempts {
		switch {
		case err != nil:
			return s.fail(ctx, "extend", err)
		case kv == nil || kv.Lease == 0:
			return lock.ErrNotHeld
		}
		var moved bool
		if moved, err = s.extend(ctx, key, kv, secs, ttl); !moved {
			return err
		}
		kv, err = s.lockOf(ctx, scope, key)
	}
	// The key existed at every read, so "not held" would be false.
	return fmt.Errorf("etcd extend: the lock's lease changed under the extension %d times in a row: try again", moveAttempts)
}

// moveAttempts bounds the rounds of Extend and TTL while other Extends of
// the lock keep moving it to new leases.
const moveAttempts = 3

// extend extends the lock of key, read as kv, for secs seconds. It
// returns true, to read the key again, if the key was moved from kv's
// lease to another (by another Extend) before it could be.
func (s *Store) extend(ctx context.Context, key string, kv *mvccpb.KeyValue, secs int64, ttl time.Duration) (moved bool, err error) {
	start := time.Now()
	renewed, err := s.renewer.renew(ctx, kv.Lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		// Expired, and never brought back; unless the leader lags, or the
		// key was moved to another lease, which was then revoked.
		return s.leaseGone(ctx, "extend", kv)
	case err != nil:
		return false, s.fail(ctx, "extend", err)
	case renewed == secs:
		s.pool.renewed(kv.Lease, secs, start)
		return false, nil
	}
	l, err := s.grant(ctx, key, secs, ttl)
	if err != nil {
		return false, err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", kv.Lease)).
		Then(clientv3.OpPut(key, strconv.FormatInt(wholeSeconds(ttl), 10), clientv3.WithLease(clientv3.LeaseID(l.id)))).
		Commit()
	if err != nil {
		// Either lease may hold the key: neither is kept.
		s.pool.forget(l.id, key)
		s.pool.forget(kv.Lease, key)
		return false, s.fail(ctx, "extend", err)
	}
	if !resp.Succeeded {
		// The key is gone (not held), or on another lease: read it again.
		s.drop(ctx, l.id, key)
		return true, nil
	}
	s.pool.confirm(l.id, key)
	s.pool.heads(l.id, key)    // read as the head of the line
	s.drop(ctx, kv.Lease, key) // the old lease holds nothing now
	return false, nil
}

// Exists implements [lock.Store].
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	ctx, cancel, err := s.begin(ctx, resource, "-")
	if err != nil {
		return false, err
	}
	defer cancel()
	resp, err := s.client.Get(ctx, s.scope(resource), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, s.fail(ctx, "exists", err)
	}
	return resp.Count > 0, nil
}

// TTL implements [lock.TTLReader]: the remaining time of the lock's
// lease, in whole seconds rounded down, as etcd reports it (a lock in its
// last second reads 0), and at most the lock's TTL, rounded up to whole
// seconds: the lease's slack is not the lock's.
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	ctx, cancel, err := s.begin(ctx, resource, "-")
	if err != nil {
		return 0, false, err
	}
	defer cancel()
	for range moveAttempts {
		kv, err := s.holder(ctx, s.scope(resource))
		if err != nil {
			return 0, false, s.fail(ctx, "ttl", err)
		}
		if kv == nil {
			return 0, false, nil
		}
		if kv.Lease == 0 {
			return 0, false, fmt.Errorf("etcd: ttl: key %q has no lease: not a lock of this package", kv.Key)
		}
		// The lease's keys tell whether an Extend moved the lock to
		// another lease since the read: the old one may live on, idle.
		resp, err := s.client.TimeToLive(ctx, clientv3.LeaseID(kv.Lease), clientv3.WithAttachedKeys())
		if err != nil {
			return 0, false, s.fail(ctx, "ttl", err)
		}
		if resp.TTL < 0 {
			moved, err := s.leaseGone(ctx, "ttl", kv)
			if moved {
				continue
			}
			if err != lock.ErrNotHeld {
				return 0, false, err
			}
			return 0, false, nil // expired since the key was read
		}
		if !slices.ContainsFunc(resp.Keys, func(k []byte) bool { return bytes.Equal(k, kv.Key) }) {
			continue // moved to another lease
		}
		left := resp.TTL
		if secs, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil {
			left = min(left, secs) // a lease lasts longer than its lock by its slack
		}
		return time.Duration(left) * time.Second, true, nil
	}
	return 0, false, fmt.Errorf("etcd ttl: the lock's lease changed under the reading %d times in a row: try again", moveAttempts)
}

// leaseGone is called when the leader did not find the lease of kv, the
// key of a lock as read a moment ago. A key goes with its lease, so if the
// key still has that lease, the leader has not yet applied the lease's
// grant (a leader elected a moment ago, on etcd before 3.5, answers
// before it has caught up): it returns an error, as the outcome is not
// known. If the key is there on another lease (an Extend moved it, and
// the old lease was revoked), it returns true: read the key again.
// Otherwise the lock has expired: lock.ErrNotHeld.
func (s *Store) leaseGone(ctx context.Context, op string, kv *mvccpb.KeyValue) (moved bool, err error) {
	now, err := s.get(ctx, string(kv.Key))
	switch {
	case err != nil:
		return false, s.fail(ctx, op, err)
	case now == nil:
		return false, lock.ErrNotHeld
	case now.Lease == kv.Lease && now.CreateRevision == kv.CreateRevision:
		return false, fmt.Errorf("etcd %s: the leader does not know the lease of %q yet: try again", op, kv.Key)
	}
	return true, nil
}

// get reads key, linearizably; it returns nil if the key does not exist.
func (s *Store) get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0], nil
}

// holder reads the key of the lock in scope, linearizably: the head of
// the resource's line, the key of the lowest create revision (see
// queue.go); it returns nil if resource is free. The other keys, if any,
// wait in line.
func (s *Store) holder(ctx context.Context, scope string) (*mvccpb.KeyValue, error) {
	resp, err := s.client.Get(ctx, scope, clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0], nil
}

// lockOf reads the key of the lock in scope, linearizably, and returns it
// if it is key, the lock of key's token; it returns nil if the resource is
// free, or held by another token — key may then wait in line, which is
// not holding the lock.
func (s *Store) lockOf(ctx context.Context, scope, key string) (*mvccpb.KeyValue, error) {
	kv, err := s.holder(ctx, scope)
	if err != nil || kv == nil || string(kv.Key) != key {
		return nil, err
	}
	return kv, nil
}

// slackOf returns the slack of the lease of a lock of secs seconds: how
// many seconds longer than the lock's TTL (rounded up to whole seconds)
// its lease lasts. It is a tenth of secs, rounded down: a second for a
// TTL over 9s and up to 19s, none up to 9s. A lease serves the locks taken
// within its slack of its grant or last renewal without a renewal of its
// own. A variable for the tests, read by New.
var slackOf = func(secs int64) int64 { return secs / 10 }

// seconds returns the whole seconds of the lease of a lock of ttl — ttl
// rounded up, plus its slack — and refuses a TTL the cluster cannot
// honour.
func (s *Store) seconds(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: ttl is %v: want > 0", lock.ErrInvalid, ttl)
	}
	secs := wholeSeconds(ttl)
	if min := s.minTTL.Load(); secs < min {
		return 0, fmt.Errorf("%w: ttl is %v: etcd grants leases of at least %ds on this store (see WithMinTTL)", lock.ErrInvalid, ttl, min)
	}
	if secs += s.slackOf(secs); secs > clientv3.MaxLeaseTTL {
		return 0, fmt.Errorf("%w: ttl is %v: etcd grants leases of at most %ds, and a lock's lease lasts a tenth longer than its TTL", lock.ErrInvalid, ttl, clientv3.MaxLeaseTTL)
	}
	return secs, nil
}

// wholeSeconds returns ttl in whole seconds, rounded up: the TTL a lock's
// key holds, as its value, so that TTL reports no more than that. It
// does not add before dividing, which would overflow for the longest
// TTLs and make them negative.
func wholeSeconds(ttl time.Duration) int64 {
	secs := int64(ttl / time.Second)
	if ttl%time.Second > 0 {
		secs++
	}
	return secs
}

// begin validates the arguments of a call and its context, and bounds
// the context by the store's timeout; the caller must call cancel.
func (s *Store) begin(ctx context.Context, resource, token string) (_ context.Context, cancel context.CancelFunc, err error) {
	if err := check(ctx, resource, token); err != nil {
		return nil, nil, err
	}
	ctx, cancel = s.bound(ctx)
	return ctx, cancel, nil
}

// bound bounds ctx by the store's timeout, if it has one.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, s.timeout, timeoutError{s.timeout})
}

// check validates the arguments of a call and the context.
func check(ctx context.Context, resource, token string) error {
	if err := storecall.Check(ctx, token, 1); err != nil {
		return err
	}
	if resource == "" {
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	}
	return nil
}

// timeoutError ends a call that WithTimeout bounds. It does not match
// context.DeadlineExceeded: the caller's context is still alive.
type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (WithTimeout)", e.after)
}

// fail wraps the error of a call that did not complete: the context's
// error if ctx ended (so that errors.Is matches the caller's context
// error), and otherwise etcd's. Neither is ever a lock outcome: the call
// may have taken effect. A request too large for etcd or for the client
// was refused before it was applied, and would be refused again: that
// error wraps lock.ErrInvalid, so that the lockers do not retry it.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if tooLarge(err) {
		return fmt.Errorf("%w: etcd %s: %w", lock.ErrInvalid, op, err)
	}
	if cause, ok := context.Cause(ctx).(timeoutError); ok {
		return fmt.Errorf("etcd %s: %w", op, cause)
	}
	err = clientv3.ContextError(ctx, err)
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		// etcd's own words for the deadline the client passed on to it
		// ("context deadline exceeded" with code Unknown, "request timed
		// out"), which ContextError does not convert.
		err = fmt.Errorf("%w: %w", ctxErr, err)
	}
	return fmt.Errorf("etcd %s: %w", op, err)
}

// tooLarge reports whether err refuses a request for its size, before
// it was applied: etcd's limit (--max-request-bytes, 1.5 MiB by default),
// or the client's (MaxCallSendMsgSize, 2 MiB by default), which stops it
// before it is sent. gRPC words an answer too large for the client's
// receive limit as it does a request too large for the server's, and the
// request of such an answer was applied: that is not matched.
func tooLarge(err error) bool {
	if errors.Is(rpctypes.Error(err), rpctypes.ErrRequestTooLarge) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "trying to send message larger than max")
}
