package memory

import (
	"context"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// offer is embedded in Store, unexported: it offers a lock.SingleLocker
// the store's own bookkeeping (inproc.Store), so that the locker reads no
// clock around a call and keeps no set of held locks of its own: the
// store reports the clock reading at which it decided, and records which
// locker took each lock.
type offer = inproc.Offer

// inprocStore is a Store seen as an inproc.Store.
type inprocStore Store

var _ inproc.Store = (*inprocStore)(nil)

// AcquireStamped implements inproc.Store. Without injected faults the
// store decides at the instant it reports; with them, a call may be
// delayed as a remote store's would be, and it reports what a locker
// would have measured around it.
func (p *inprocStore) AcquireStamped(ctx context.Context, owner uint64, resource, token string, ttl time.Duration) (uint64, inproc.Instant, time.Duration, error) {
	s := (*Store)(p)
	if !s.faults.injected() {
		if err := check(ctx, resource, token, ttl); err != nil {
			return 0, 0, 0, err
		}
		fence, now, err := s.applyAcquire(resource, token, ttl, owner)
		return fence, s.global(now), 0, err
	}
	start := inproc.Now()
	fence, err := s.acquire(ctx, OpAcquire, resource, token, ttl, owner)
	return fence, start, inproc.Since(start), err
}

// ReleaseStamped implements inproc.Store, as AcquireStamped does.
func (p *inprocStore) ReleaseStamped(ctx context.Context, resource, token string) (inproc.Instant, time.Duration, error) {
	s := (*Store)(p)
	if !s.faults.injected() {
		if err := check(ctx, resource, token, 1); err != nil {
			return 0, 0, err
		}
		now, err := s.applyRelease(resource, token)
		return s.global(now), 0, err
	}
	start := inproc.Now()
	err := s.Release(ctx, resource, token)
	return start, inproc.Since(start), err
}

// ExtendStamped implements inproc.Store.
func (p *inprocStore) ExtendStamped(ctx context.Context, owner uint64, resource, token string, ttl time.Duration) error {
	return (*Store)(p).extend(ctx, resource, token, ttl, owner)
}

// HeldBy implements inproc.Store: the locks owner took that the store
// still holds, as of owner's own latest acquisition or extension of each,
// until that runs out (another's extension beyond it does not count).
func (p *inprocStore) HeldBy(owner uint64) []inproc.Held {
	s := (*Store)(p)
	var out []inproc.Held
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		now := s.now()
		for r, e := range sh.locks {
			if e.owner == owner && e.live(now) && now < e.ownExpires {
				out = append(out, inproc.Held{Resource: r, Token: e.token, Fence: e.fence, Start: s.global(e.ownStart), Expires: s.global(e.ownExpires)})
			}
		}
		sh.mu.Unlock()
	}
	return out
}
