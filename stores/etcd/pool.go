package etcd

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// DefaultIdleLeases is how many leases of released locks a Store made
// without WithIdleLeases keeps for its next acquisitions.
const DefaultIdleLeases = 64

// WithIdleLeases sets how many leases of released locks the store keeps
// for its next acquisitions (all TTLs together); the default is
// DefaultIdleLeases, and 0 revokes every lease on release. A kept lease
// holds no key; it expires by itself one TTL after the lock that last
// used it was taken or extended, unless an acquisition takes it first,
// and Close revokes the ones left.
func WithIdleLeases(n int) Option { return func(s *Store) { s.pool.max = n } }

// margin is the least time a kept lease must have left, on the store's
// clock, for an acquisition to take it: one that expires before the
// acquisition's transaction is applied costs a second attempt.
const margin = 500 * time.Millisecond

// pool keeps the leases of released locks, by TTL, and the leases lent to
// locks. A lease is kept only when the store knows that no key is attached
// to it — its key was deleted, with the deletion reporting that lease or
// the lease known attached to it, or the transaction that would have
// attached one did not — and only by the lock it was lent to, and is taken
// by one acquisition at a time, so no two keys are ever attached to one
// lease at once.
type pool struct {
	mu       sync.Mutex
	max      int
	idle     map[int64][]lease  // by TTL in seconds, the most recently kept last
	kept     map[int64]struct{} // the IDs in idle
	lent     map[int64]lease    // by ID: leases attached, or about to be, to one lock each
	attached map[string]int64   // by key: the lent lease a transaction attached to it
	sweep    int                // len(lent) at which to forget the lent leases that expired
	closed   bool
}

// lease is a lease of the store's own.
type lease struct {
	id      int64
	secs    int64     // its TTL
	expires time.Time // on the store's clock, no later than it does in etcd
	key     string    // of the lock it is lent to
	head    bool      // the key, attached to it, heads its line: it holds the lock until deleted
}

func (p *pool) init() {
	p.idle = make(map[int64][]lease)
	p.kept = make(map[int64]struct{})
	p.lent = make(map[int64]lease)
	p.attached = make(map[string]int64)
	p.sweep = 64
}

// take returns a kept lease of secs seconds with more than margin left
// at now, and lends it to the lock of key; it drops the kept leases about to expire. renew
// reports whether the lease must be renewed for a lock of ttl taken at
// now: whether etcd may expire it before now+ttl. A lease lives in etcd
// at least until its expires, so one that expires at now+ttl or later
// needs no renewal: etcd may only expire it later.
func (p *pool) take(key string, secs int64, now time.Time, ttl time.Duration) (l lease, ok, renew bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.idle[secs]
	for len(kept) > 0 {
		l := kept[len(kept)-1]
		kept = kept[:len(kept)-1]
		delete(p.kept, l.id)
		if l.expires.Sub(now) > margin {
			p.idle[secs] = kept
			l.key = key
			p.lend(l)
			return l, true, l.expires.Before(now.Add(ttl))
		}
	}
	delete(p.idle, secs)
	return lease{}, false, false
}

// lend records that l is attached, or about to be, to one lock, and
// forgets the lent leases whose lock expired now and then, so that locks
// never released do not accumulate.
func (p *pool) lend(l lease) {
	if len(p.lent) >= p.sweep {
		now := time.Now()
		for _, l := range p.lent {
			if now.After(l.expires) {
				p.unlend(l)
			}
		}
		p.sweep = max(64, 2*len(p.lent))
	}
	l.head = false // its new lock's key may wait in line
	p.lent[l.id] = l
}

// unlend forgets the lent lease l.
func (p *pool) unlend(l lease) {
	delete(p.lent, l.id)
	if p.attached[l.key] == l.id {
		delete(p.attached, l.key)
	}
}

// confirm records that a transaction attached the lease id, lent to the
// lock of key, to that key.
func (p *pool) confirm(id int64, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.lent[id]; ok && l.key == key {
		p.attached[key] = id
	}
}

// heads records that the key of the lock the lent lease id is attached to
// heads its line: as deleted keys never come back and new ones queue
// behind, it holds the lock until it is deleted.
func (p *pool) heads(id int64, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.lent[id]; ok && l.key == key && p.attached[key] == id {
		l.head = true
		p.lent[id] = l
	}
}

// heading returns the lease attached to key, as attachedTo does, if the
// store knows that key heads its line (see heads).
func (p *pool) heading(key string) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.attached[key]
	return id, ok && p.lent[id].head
}

// attachedTo returns the lease that the last transaction of the store to
// attach one to key attached, if it is still lent to that key. The key
// may have moved to another lease since (an Extend racing the caller):
// keep and forget leave a lease lent to another lock alone.
func (p *pool) attachedTo(key string) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.attached[key]
	return id, ok
}

// granted lends a lease the store has just been granted.
func (p *pool) granted(l lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lend(l)
}

// renewed records that the lent lease id was renewed, after start, for
// secs seconds.
func (p *pool) renewed(id, secs int64, start time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.lent[id]; ok && l.secs == secs {
		l.expires = start.Add(time.Duration(secs) * time.Second)
		p.lent[id] = l
	}
}

// keep keeps the lease id, which was attached to the lock of key and
// holds no key now, for another lock, and reports whether the caller
// must revoke it instead: when the pool is full or closed, or the store
// did not lend the lease (another store took the lock, or the lock
// expired and the pool forgot it). A lease the store lent to another
// lock since, or keeps already, is not the caller's to keep or revoke:
// it is left alone.
func (p *pool) keep(id int64, key string) (revoke bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.lent[id]
	switch {
	case !ok:
		_, kept := p.kept[id]
		return !kept
	case l.key != key:
		return false
	}
	p.unlend(l)
	l.key = ""
	if p.closed || len(p.kept) >= p.max {
		return true
	}
	p.idle[l.secs] = append(p.idle[l.secs], l)
	p.kept[id] = struct{}{}
	return false
}

// forget forgets the lease id lent to the lock of key, whose key is in a
// state the store does not know: it is never kept. A lease lent to
// another lock since is left alone.
func (p *pool) forget(id int64, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.lent[id]; ok && l.key == key {
		p.unlend(l)
	}
}

// close stops keeping leases and returns the kept ones.
func (p *pool) close() []lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var kept []lease
	for _, ls := range p.idle {
		kept = append(kept, ls...)
	}
	p.idle, p.kept = make(map[int64][]lease), make(map[int64]struct{})
	return kept
}

// Close revokes the leases the store keeps for its next acquisitions
// (see WithIdleLeases), and stops keeping any: its releases revoke their
// leases from then on. It closes the keepalive streams the store keeps
// open (a later renewal opens one) and ends the watches of resources no
// WaitRelease or AcquireQueued waits on any more (a later wait starts
// one). The store remains usable. It does not close the client, and
// releases no lock. A lease it fails to revoke expires by itself within
// its TTL; Close returns the first error. A ctx that has
// ended does not keep Close from what needs no request: it stops keeping
// leases, and closes the streams and watches, and returns ctx's error.
// Close may be called more than once.
func (s *Store) Close(ctx context.Context) error {
	if ctx == nil {
		return check(ctx, "-", "-") // lock.ErrInvalid
	}
	s.renewer.close()
	s.hub.closeIdle()
	kept := s.pool.close()
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var first error
	for _, l := range kept {
		err := s.revoke(ctx, l.id)
		if err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) && first == nil {
			first = s.fail(ctx, "close", err)
		}
	}
	return first
}
