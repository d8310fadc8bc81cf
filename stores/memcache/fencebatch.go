package memcache

import (
	"sync"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// Group commit of fences. Acquisitions that hold their lock and need a
// fence at the same moment share one incr: a caller that finds no incr of
// the store's in flight sends its own; callers that arrive while one is in
// flight queue up, and when it returns the first of them sends one
// "incr <counter> n" for the n queued and hands each one value of the
// range, in the order they queued. Every caller is served by an incr sent
// after it queued, so after its own add took its lock and before it has
// its fence back: the package doc (Fences) says why that keeps fences
// increasing. Under load that is one incr per round trip instead of one
// per acquisition; a lone acquisition sends its incr at once, as before.
// The callers run the incrs themselves: no goroutine is started, and a
// caller waits at most for the incr in flight and then its own, each
// bounded by the client's Timeout (and, for a lost counter, the fence
// guard and the add that creates it again).

// fenceQueue is a store's line of callers waiting to draw a fence.
type fenceQueue struct {
	mu      sync.Mutex
	drawing bool       // an incr is in flight, or about to be sent by the head of a handed-off line
	head    *fenceDraw // the callers queued meanwhile, in order
	tail    *fenceDraw
	n       int
}

// fenceDraw is one queued caller: it waits on ready, and then either has
// its fence (or error), or leads the next batch (lead > 0).
type fenceDraw struct {
	ready chan struct{} // receives once per use; buffered so senders never block
	next  *fenceDraw
	lead  int // the batch's size, when this caller is to send its incr
	fence uint64
	err   error
}

var fenceDraws = sync.Pool{New: func() any { return &fenceDraw{ready: make(chan struct{}, 1)} }}

// drawFence returns the next fence, from an incr of its own or shared
// with the callers that queued with it.
func (s *Store) drawFence() (uint64, error) {
	if s.client.MaxIdleConns <= gomemcache.DefaultMaxIdleConns {
		// The acquisitions of a batch go on together; with so few idle
		// connections, they would dial and close connections all the
		// more (half the throughput at 64 goroutines).
		return s.incrFences(1)
	}
	q := &s.fences
	q.mu.Lock()
	if !q.drawing {
		q.drawing = true
		q.mu.Unlock()
		fence, err := s.incrFences(1)
		s.handOffFences()
		return fence, err
	}
	d := fenceDraws.Get().(*fenceDraw)
	if q.tail == nil {
		q.head = d
	} else {
		q.tail.next = d
	}
	q.tail = d
	q.n++
	q.mu.Unlock()

	<-d.ready
	fence, err := d.fence, d.err
	if d.lead > 0 {
		fence, err = s.drawBatch(d)
	}
	*d = fenceDraw{ready: d.ready}
	fenceDraws.Put(d)
	return fence, err
}

// drawBatch sends one incr for the d.lead callers of the batch led by d,
// hands the callers queued meanwhile to their leader, hands each caller
// of the batch but d its fence (or the error), and returns d's fence, the
// batch's first. The batch is a chain of its own by then: the callers
// queued later start a new one.
func (s *Store) drawBatch(d *fenceDraw) (uint64, error) {
	n := uint64(d.lead)
	last, err := s.incrFences(n)
	s.handOffFences() // the next incr goes out while this batch is answered
	first := last - n + 1
	if err != nil {
		first = 0
	}
	next := d.next
	for i := uint64(1); i < n; i++ {
		m := next
		next = m.next // read before ready: m is reused once it wakes
		if err == nil {
			m.fence = first + i
		}
		m.err = err
		m.ready <- struct{}{}
	}
	return first, err
}

// handOffFences ends the incr of the caller that sent the last one: the
// callers queued meanwhile, if any, become the next batch, led by the
// first of them.
func (s *Store) handOffFences() {
	q := &s.fences
	q.mu.Lock()
	head, n := q.head, q.n
	q.head, q.tail, q.n = nil, nil, 0
	q.drawing = n > 0
	q.mu.Unlock()
	if n > 0 {
		head.lead = n
		head.ready <- struct{}{}
	}
}

// incrFences draws n fences with one incr and returns the last.
func (s *Store) incrFences(n uint64) (uint64, error) {
	if s.beforeFenceIncr != nil {
		s.beforeFenceIncr(int(n))
	}
	return s.nextFence(n - 1)
}
