package memcache

import (
	"sync"
	"time"

	"github.com/lockkit/lock"
)

// Releases by CAS id (WithServer, memcached 1.6.18 or later). The store's
// own add is a meta set that returns the new item's CAS id; the store
// keeps it, with the run of the server that gave it, until the lock's
// Release, which then deletes the item with one "md <key> C<cas>" instead
// of a gets and a cas. memcached hands out CAS ids from one counter per
// run, so within the run the id names this item and no other: a lock
// that expired and was taken again, or that an Extend rewrote, holds
// another id, and the delete changes nothing ("EX"); the Release then
// looks again by gets and cas, by token. A connection to another run of
// the server (memcached restarted and counts CAS ids from 1 again) is
// never sent the delete: that run's items are not the ones the ids were
// given for. Whatever the store cannot tell by CAS id it does by token.

// casBook is what the store remembers of the locks it took with a meta
// set: a record per key and token, from the acquisition to its Release
// or Extend (which changes the id), or until the lock's TTL has passed:
// records of locks never released are swept then.
type casBook struct {
	mu      sync.Mutex
	held    map[casKey]casRecord
	sweepAt int // the size at which the next record sweeps expired ones
}

type casKey struct{ key, token string }

type casRecord struct {
	cas    uint64
	server serverRun
	until  time.Time // the lock has expired by then
}

// minSweep is the fewest records a book keeps before it sweeps.
const minSweep = 1024

// record remembers the CAS id of a lock the store took, whose TTL is ttl.
func (b *casBook) record(key, token string, cas uint64, server serverRun, ttl time.Duration) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = make(map[casKey]casRecord)
	}
	if len(b.held) >= b.sweepAt {
		for k, r := range b.held {
			if now.After(r.until) {
				delete(b.held, k)
			}
		}
		b.sweepAt = max(2*len(b.held), minSweep)
	}
	b.held[casKey{key, token}] = casRecord{cas: cas, server: server, until: now.Add(ttl + Granularity)}
}

// take returns and forgets the record of key under token.
func (b *casBook) take(key, token string) (casRecord, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.held[casKey{key, token}]
	if ok {
		delete(b.held, casKey{key, token})
	}
	return r, ok
}

// releaseByCAS releases key under token with a meta delete by the CAS id
// its acquisition recorded. done is false when it cannot tell the outcome
// that way — no record, a connection to another run of the server, the
// item changed since — and the caller releases by gets and cas.
//
// A delete whose connection turns out to be broken (memcached restarted,
// or dropped the connection while it was idle) is sent again on another,
// as get.go sends reads: one to another run finds the lock gone with the
// run that held it, and the caller's gets says so; one to the same run
// that finds the key gone, or holding another item, cannot tell whether
// the broken delete took effect, and reports the failure, not
// lock.ErrNotHeld.
func (s *Store) releaseByCAS(key, token string) (done bool, err error) {
	if s.pipe == nil {
		return false, nil
	}
	r, ok := s.cas.take(key, token)
	if !ok {
		return false, nil
	}
	var broken error
	for attempt := 0; ; attempt++ {
		c, err := s.pipe.conn()
		if err != nil {
			if broken != nil {
				return true, requestError("md", broken)
			}
			return false, nil // the client's requests say what is wrong
		}
		if c.server != r.server {
			s.pipe.reuse(c)
			return false, nil
		}
		answer, err := c.deleteCAS(key, r.cas, s.pipe.timeout())
		if err != nil {
			_ = c.nc.Close()
			if brokenConnection(err) && attempt <= s.pipe.maxIdle() {
				broken = err
				continue
			}
			return true, requestError("md", err)
		}
		s.pipe.reuse(c)
		switch {
		case answer == deleted:
			return true, nil
		case broken != nil:
			// Gone, or another item now: the broken delete may have
			// taken effect (and a new owner may have taken the lock
			// since), or not; a look by token cannot tell either.
			return true, requestError("md", broken)
		case answer == notFound:
			return true, lock.ErrNotHeld
		default: // changed: by an Extend with the same token, or a new owner
			return false, nil
		}
	}
}
