package memcache

import (
	"context"
	"fmt"
)

// gomemcache takes no context: each request is bounded only by the
// client's Timeout. A call whose ctx can end (ctx.Done() != nil) runs its
// requests in a goroutine of its own and returns as soon as ctx ends, with
// the context's error; the abandoned requests finish in the background
// within the client's Timeout, and a Release or Extend abandoned between
// its gets and its cas sends no cas. A call whose ctx can never end runs
// its requests directly, without the cost of a goroutine.

// detach runs f in its own goroutine and returns its error, or the
// context's error if ctx ends first.
func detach(ctx context.Context, f func() error) error {
	done := make(chan error, 1) // buffered: an abandoned f must not block
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // finished at the same moment: its answer is known
			return err
		default:
		}
		return abandoned(ctx)
	}
}

type result[T any] struct {
	v   T
	err error
}

// detach2 is detach for a function with a result.
func detach2[T any](ctx context.Context, f func() (T, error)) (T, error) {
	done := make(chan result[T], 1) // buffered: an abandoned f must not block
	go func() {
		v, err := f()
		done <- result[T]{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished at the same moment: its answer is known
			return r.v, r.err
		default:
		}
		var zero T
		return zero, abandoned(ctx)
	}
}

// abandoned is the error of a call that ctx ended after its request was
// sent: the context's error, as the outcome is unknown.
func abandoned(ctx context.Context) error {
	return fmt.Errorf("%w (memcached may still apply the request)", ctx.Err())
}
