package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// gate counts the calls of a locker that take or extend locks, so that
// Shutdown can refuse new ones, stop those that wait, and wait for those
// under way before it releases what the locker holds.
type gate struct {
	state    atomic.Int64       // calls in flight, plus closedBit once shut
	closing  context.Context    // canceled by shut: ends the waits of Lock
	close    context.CancelFunc //
	idle     chan struct{}      // closed once shut with no call in flight
	idleOnce sync.Once
	base     *gate // the gate of the locker this one takes its locks with, if followed (see follow)
}

const closedBit = 1 << 62

func (g *gate) init() {
	g.closing, g.close = context.WithCancel(context.Background())
	g.idle = make(chan struct{})
}

// enter admits a call, unless the gate is shut. An admitted call must
// leave.
func (g *gate) enter() bool {
	if g.state.Add(1)&closedBit != 0 {
		g.leave()
		return false
	}
	return true
}

func (g *gate) leave() {
	if g.state.Add(-1) == closedBit {
		g.idleOnce.Do(func() { close(g.idle) })
	}
}

// shut refuses every later call and ends the waits of those in flight;
// drain waits for those to leave.
func (g *gate) shut() {
	old := g.state.Or(closedBit)
	g.close()
	if old&^closedBit == 0 {
		g.idleOnce.Do(func() { close(g.idle) })
	}
}

// drain waits for the calls in flight on gates, each shut, to leave: for
// patience at most in all, or until ctx ends.
func drain(ctx context.Context, patience time.Duration, gates ...*gate) {
	t := time.NewTimer(patience)
	defer t.Stop()
	for _, g := range gates {
		select {
		case <-g.idle:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// follow makes g's waits end when base's do, and isShut report a shut
// base: a locker built on another one (a semaphore, native or of plain
// locks; a read-write lock's side) can take nothing once that one is shut
// down, so its Lock must not wait on for a release. It is called once,
// before g is used.
func (g *gate) follow(base *gate) { g.base = base }

// isShut reports whether shut was called on g or on the gate it follows.
func (g *gate) isShut() bool {
	return g.state.Load()&closedBit != 0 || g.base != nil && g.base.isShut()
}

// afterShut arranges for f to run once g, or the gate it follows, is
// shut (at once if one is), and returns a function that undoes that, as
// context.AfterFunc does. f may run more than once.
func (g *gate) afterShut(f func()) (stop func() bool) {
	stopOwn := context.AfterFunc(g.closing, f)
	if g.base == nil {
		return stopOwn
	}
	stopBase := g.base.afterShut(f)
	return func() bool { own, base := stopOwn(), stopBase(); return own && base }
}
