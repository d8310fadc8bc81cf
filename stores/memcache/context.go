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
type call[T any] struct {
	done chan struct{} // closed when f has returned
	v    T
	err  error
}

// detach starts f in a goroutine of its own.
func detach[T any](f func() (T, error)) *call[T] {
	c := &call[T]{done: make(chan struct{})}
	go func() {
		c.v, c.err = f()
		close(c.done)
	}()
	return c
}

// wait returns the call's result, or the context's error if ctx ends
// first. A call that ended at the same moment is reported as it ended.
func (c *call[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
	}
	select {
	case <-c.done:
		return c.v, c.err
	default:
		var zero T
		return zero, fmt.Errorf("%w (memcached may still apply the request)", ctx.Err())
	}
}

// running reports whether the call has not yet returned.
func (c *call[T]) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// noValue adapts an operation without a result to detach.
func noValue(f func() error) func() (struct{}, error) {
	return func() (struct{}, error) { return struct{}{}, f() }
}
