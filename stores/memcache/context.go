package memcache

import (
	"context"
	"fmt"
	"time"
)

// gomemcache takes no context: each request is bounded only by the
// client's Timeout. A call whose ctx can end (ctx.Done() != nil) runs its
// requests in a goroutine of its own and returns as soon as ctx ends, with
// the context's error; the abandoned requests go on in the background,
// each within the client's Timeout. A call whose ctx can never end runs
// its requests directly, without the cost of a goroutine.
//
// The goroutines that run detached calls, runners, outlive one call: a
// runner that has served a request has grown the stack the next one needs,
// where a fresh goroutine grows (copies) its stack on every call — about
// 5% of the client's CPU under load. A runner waits idleRunner for its
// next call and then ends, so none is left once the stores are idle.

// call is a store operation running in a goroutine of its own.
type call struct {
	f     func(c *call) // the operation
	done  chan struct{} // closed when the operation has returned
	held  bool          // Exists' answer
	fence uint64        // AcquireFenced's answer
	err   error
}

// idleRunner is how long a runner waits for a call before it ends.
const idleRunner = time.Second

// runners hands a call to a runner waiting for one; unbuffered, so that a
// send succeeds only if one is waiting.
var runners = make(chan *call)

// detach starts f in a goroutine other than the caller's, a waiting runner
// or a new one; f sets c.err (and c.held or c.fence).
func detach(f func(c *call)) *call {
	c := &call{f: f, done: make(chan struct{})}
	select {
	case runners <- c:
	default:
		go run(c)
	}
	return c
}

// run runs c, then the calls handed to it, until it has waited idleRunner
// for one.
func run(c *call) {
	idle := time.NewTimer(idleRunner)
	defer idle.Stop()
	for {
		c.f(c)
		close(c.done)
		idle.Reset(idleRunner)
		select {
		case c = <-runners:
		case <-idle.C:
			return
		}
	}
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
