package conformance_test

import (
	"context"
	"errors"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// The controls of the reads and waits made with a dead context, of
// re-entrant fenced acquisitions, and of unknown started calls. Each store
// is a memory store with one method broken.
func init() {
	for name, c := range map[string]control{
		"exists-free-on-dead-context": {
			store: func() lock.Store { return existsFreeOnError() },
			rule:  "CanceledContext", wants: []string{"Exists(held) with a canceled context = false, nil while holder holds held; want context.Canceled, or true"},
		},
		"wait-release-free-on-dead-context": {
			store: func() lock.Store { return waitReleaseFreeOnDeadContext() },
			rule:  "ExpiredDeadline", wants: []string{"WaitRelease(held) with an expired context while holder holds held = nil; want context.DeadlineExceeded"},
		},
		"acquire-fenced-reentrant": {
			store: func() lock.Store { return acquireFencedReentrant() },
			rule:  "AcquireHeldBySelf", wants: []string{"AcquireFenced(r, a) while a holds r = 2, nil; want ErrNotAcquired (locks are not re-entrant)"},
		},
		"start-answers-unknown-call-with-nil": {
			store: func() lock.Store { return startAnswersUnknownWithNil() },
			rule:  "StartUnknownCall", wants: []string{"Start(unknown call 200 r, a) = nil; want an error matching lock.ErrInvalid"},
		},
	} {
		controls[name] = c
	}
}

// existsFreeOnError says a resource is free whenever it could not ask,
// as a store that reads a failed lookup as "no such key".
func existsFreeOnError() *brokenstore.Store {
	return brokenstore.New(func(_ *brokenstore.Store, mem *memory.Store, f *brokenstore.Funcs) {
		f.Exists = func(ctx context.Context, resource string) (bool, error) {
			held, err := mem.Exists(ctx, resource)
			if err != nil {
				return false, nil
			}
			return held, nil
		}
	})
}

// waitReleaseFreeOnDeadContext returns nil from a WaitRelease whose
// context has ended, as if the resource had been released: a Lock whose
// caller gave up tries again at once.
func waitReleaseFreeOnDeadContext() *brokenstore.Store {
	return brokenstore.New(func(_ *brokenstore.Store, mem *memory.Store, f *brokenstore.Funcs) {
		f.WaitRelease = func(ctx context.Context, resource string) error {
			if ctx.Err() != nil {
				return nil
			}
			return mem.WaitRelease(ctx, resource)
		}
	})
}

// acquireFencedReentrant lets the holder take its own lock again with
// AcquireFenced, with a new fence.
func acquireFencedReentrant() *brokenstore.Store {
	return brokenstore.New(func(_ *brokenstore.Store, mem *memory.Store, f *brokenstore.Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
			if errors.Is(err, lock.ErrNotAcquired) && mem.Release(ctx, resource, token) == nil {
				return mem.AcquireFenced(ctx, resource, token, ttl)
			}
			return fence, err
		}
	})
}

// startAnswersUnknownWithNil answers a started call it does not know
// with success.
func startAnswersUnknownWithNil() *brokenstore.Store {
	return brokenstore.New(func(s *brokenstore.Store, _ *memory.Store, f *brokenstore.Funcs) {
		f.Start = func(ctx context.Context, c lock.Call, done func(uint64, error)) {
			if c.Op > lock.CallRaiseFence {
				done(0, nil)
				return
			}
			done(c.Run(ctx, s))
		}
	})
}
