package otelhook

import (
	"context"
	"errors"
	"sync"

	"github.com/lockkit/lock"
)

// attempts follows the attempts of one Lock or TryLock call, for
// lock.contention. An attempt that found the resource held is counted
// when the call retries (EventRetry with ErrNotAcquired) or gives up
// (EventNotAcquired). A call whose context ended during that attempt
// reports the context's error, and no EventRetry: only the attempt's own
// outcome says the resource was held. That is its store call's answer
// (EventStoreCall, "acquire"), or, for an attempt on several stores, its
// quorum's (EventQuorum): the answers of single stores decide nothing
// there, and some arrive after the quorum, even during the next attempt.
type attempts struct {
	mu      sync.Mutex
	refused bool // the current attempt found the resource held, and is not counted yet
	quorums bool // the call's attempts are decided by quorums
}

type attemptsKey struct{}

// withAttempts returns ctx carrying a record of the attempts of a call
// of op, if op acquires.
func withAttempts(ctx context.Context, op string) context.Context {
	if op != "lock" && op != "trylock" {
		return ctx
	}
	return context.WithValue(ctx, attemptsKey{}, &attempts{})
}

// attemptsOf returns the record withAttempts put in ctx, or nil: the
// events of a call that did not begin with Begin (a hook wrapping this
// one, a test) are counted from EventRetry and EventNotAcquired alone.
func attemptsOf(ctx context.Context) *attempts {
	a, _ := ctx.Value(attemptsKey{}).(*attempts)
	return a
}

// observe notes what e says of the current attempt's outcome.
func (a *attempts) observe(e lock.Event) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch e.Kind {
	case lock.EventAttempt:
		a.refused = false
	case lock.EventStoreCall:
		if e.StoreOp == "acquire" && !a.quorums {
			a.refused = errors.Is(e.Err, lock.ErrNotAcquired)
		}
	case lock.EventQuorum:
		a.quorums = true
		a.refused = errors.Is(e.Err, lock.ErrNotAcquired)
	}
}

// takeRefusal reports whether the current attempt found the resource
// held and was not counted yet, and marks it counted.
func (a *attempts) takeRefusal() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	refused := a.refused
	a.refused = false
	return refused
}
