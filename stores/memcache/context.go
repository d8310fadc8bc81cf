package memcache

import (
	"context"
	"fmt"
)

// gomemcache takes no context: each request is bounded only by the
// client's Timeout. A call whose ctx can end (ctx.Done() != nil) runs its
// requests in a goroutine of its own and returns as soon as ctx ends, with
// the context's error; the abandoned requests go on in the background,
// each within the client's Timeout. A call whose ctx can never end runs
// its requests directly, without the cost of a goroutine.

// call is a store operation running in a goroutine of its own.
type call struct {
	done  chan struct{} // closed when the operation has returned
	held  bool          // Exists' answer
	fence uint64        // AcquireFenced's answer
	err   error
}

// detach starts f in a goroutine of its own; f sets c.err (and c.held or
// c.fence).
func detach(f func(c *call)) *call {
	c := &call{done: make(chan struct{})}
	go func() {
		f(c)
		close(c.done)
	}()
	return c
}

// wait returns the call's error, or the context's error if ctx ends
// first. A call that ended at the same moment is reported as it ended.
func (c *call) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
	}
	select {
	case <-c.done:
		return c.err
	default:
		return fmt.Errorf("%w (memcached may still apply the request)", ctx.Err())
	}
}

// running reports whether the call has not yet returned.
func (c *call) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}
