package memcache

import (
	"sync"
	"sync/atomic"
)

// pending tracks the adds that were abandoned (their caller's context
// ended) while still on their way to memcached.
//
// A caller whose Acquire was abandoned does not know whether it got the
// lock, so it releases by token — and gomemcache may send that release on
// another connection, where memcached can serve it before the add. The
// release would find nothing, and the add would then leave a lock nobody
// holds until its TTL ran out. So Release and Extend of the same key and
// token first wait for such an add to end (bounded by the client's
// Timeout); a Release whose own caller gave up meanwhile still finishes in
// the background.
type pending struct {
	n    atomic.Int64 // entries in m: the common case, none, costs one load
	adds sync.Map     // key + "\x00" + token → <-chan struct{} closed when the add ends
}

// add records an abandoned add of key under token that ends when done
// closes.
func (p *pending) add(key, token string, done <-chan struct{}) {
	id := key + "\x00" + token // keys hold no NUL byte
	p.n.Add(1)
	p.adds.Store(id, done)
	go func() {
		<-done
		p.adds.CompareAndDelete(id, done)
		p.n.Add(-1)
	}()
}

// wait blocks until no abandoned add of key under token is on its way.
func (p *pending) wait(key, token string) {
	if p.n.Load() == 0 {
		return
	}
	if done, ok := p.adds.Load(key + "\x00" + token); ok {
		<-done.(<-chan struct{})
	}
}
