package memory

import (
	"context"

	"github.com/lockkit/lock"
)

// Start implements [lock.Starter]. Without injected faults it makes the
// call at once and calls done before returning, so a lock.MultiLocker
// over memory stores starts no goroutine. While faults are injected it
// makes the call in a goroutine of its own, so that an injected delay
// holds up only that store, as it would with a slow server.
//
// Start, like AcquireFenced, calls the Store's own methods: a type that
// embeds *Store and overrides Acquire, Release or Extend (to count or
// alter calls) must override Start and AcquireFenced too, or hide them.
func (s *Store) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	if s.faults.active.Load() == 0 {
		done(c.Run(ctx, s))
		return
	}
	go func() { done(c.Run(ctx, s)) }()
}
