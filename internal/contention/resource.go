package contention

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counter is the lost-update detector: the protected section reads it,
// sleeps, and writes back the value read plus one. The read and the write
// are separate steps on purpose, so two holders at once lose an update.
// The zero Counter is ready to use and safe for concurrent use.
type Counter struct {
	value  atomic.Int64
	writes atomic.Int64
}

// Read returns the counter's value.
func (c *Counter) Read() int64 { return c.value.Load() }

// Write sets the counter to v and counts the write.
func (c *Counter) Write(v int64) {
	c.value.Store(v)
	c.writes.Add(1)
}

// Value returns the counter's value.
func (c *Counter) Value() int64 { return c.value.Load() }

// Writes returns the number of writes.
func (c *Counter) Writes() int64 { return c.writes.Load() }

// Lost returns the number of lost updates: writes made minus the value
// reached. It is 0 when no two read–write sections interleaved.
func (c *Counter) Lost() int64 { return c.writes.Load() - c.value.Load() }

// FencedWrite is one write offered to a [FencedResource].
type FencedWrite struct {
	Client   int
	Token    string        // the writer's lock
	Fence    uint64        // the writer's fence
	At       time.Duration // when it was offered (offset from the recorder's start)
	Accepted bool
}

// FencedResource is a resource guarded by fencing tokens: it accepts a
// write only if its fence is at least the highest fence it has accepted.
// It keeps every write offered, in order, for [CheckFences]. The zero
// FencedResource is ready to use and safe for concurrent use.
type FencedResource struct {
	mu      sync.Mutex
	highest uint64
	log     []FencedWrite
}

// Write offers a write made under the lock (token, fence) by client at
// offset at, and reports whether the resource accepted it.
func (f *FencedResource) Write(client int, token string, fence uint64, at time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := fence >= f.highest
	if ok {
		f.highest = fence
	}
	f.log = append(f.log, FencedWrite{Client: client, Token: token, Fence: fence, At: at, Accepted: ok})
	return ok
}

// Writes returns a copy of the writes offered, in the order offered.
func (f *FencedResource) Writes() []FencedWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FencedWrite(nil), f.log...)
}

// FenceStats counts the writes offered to a fenced resource.
type FenceStats struct {
	Accepted, Rejected int
	// StaleAccepted counts accepted writes made under a lock L after the
	// resource had already accepted a write made under a strictly newer
	// lock — one whose acquisition began after L's acquisition returned.
	// That is the order fencing exists to keep, so it must be 0; it is
	// judged from the recorded acquisitions, not from the fences, so
	// fences that do not follow the order of the grants are caught.
	StaleAccepted int
}

// CheckFences judges the writes offered to one resource against the
// recorded operations. Writes whose lock has no recorded OK acquisition are
// counted as accepted or rejected but cannot be judged stale.
func CheckFences(ops []Op, writes []FencedWrite) FenceStats {
	type span struct{ start, end time.Duration }
	acquired := make(map[string]span)
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Outcome == OK {
			acquired[op.Token] = span{op.Start, op.End}
		}
	}
	var st FenceStats
	newest, seen := time.Duration(0), false // latest acquisition start among locks with an accepted write
	for _, w := range writes {
		if !w.Accepted {
			st.Rejected++
			continue
		}
		st.Accepted++
		a, ok := acquired[w.Token]
		if !ok {
			continue
		}
		if seen && newest > a.end {
			st.StaleAccepted++
		}
		if !seen || a.start > newest {
			newest, seen = a.start, true
		}
	}
	return st
}
