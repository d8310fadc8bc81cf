package etcd

import (
	"testing"
	"time"
)

// keep and forget act on a lease only for the lock it is lent to: a
// caller whose idea of its lock's lease is stale (an Extend moved the lock
// meanwhile, and the old lease went to another lock) neither keeps nor
// revokes another lock's lease, nor keeps a lease twice.
func TestKeepActsOnlyForTheLockTheLeaseIsLentTo(t *testing.T) {
	var p pool
	p.init()
	p.max = 4
	p.granted(lease{id: 1, secs: 2, expires: time.Now().Add(time.Minute), key: "a"})
	if revoke := p.keep(1, "b"); revoke {
		t.Errorf("keep(1, b) of a lease lent to a = revoke; want it left alone")
	}
	p.forget(1, "b")
	if l, ok := p.lent[1]; !ok || l.key != "a" {
		t.Fatalf("after keep(1, b) and forget(1, b), lease 1 lent = %+v, %v; want lent to a still", l, ok)
	}
	if revoke := p.keep(1, "a"); revoke {
		t.Errorf("keep(1, a) of a lease lent to a, the pool not full = revoke; want it kept")
	}
	if revoke := p.keep(1, "a"); revoke {
		t.Errorf("keep(1, a) of a lease kept already = revoke; want it left alone (it is the pool's)")
	}
	if n := len(p.idle[2]); n != 1 {
		t.Errorf("%d leases of 2s kept after keeping lease 1 twice; want 1", n)
	}
	if revoke := p.keep(7, "a"); !revoke {
		t.Errorf("keep(7, a) of a lease the store never lent = keep; want revoke")
	}
	p.granted(lease{id: 2, secs: 2, expires: time.Now().Add(time.Minute), key: "c"})
	p.forget(2, "c")
	if _, ok := p.lent[2]; ok {
		t.Errorf("forget(2, c) of a lease lent to c left it lent")
	}
}

// The lease known attached to a key is the one a transaction attached,
// while it is lent to that key: not one lent and not yet attached, and
// not once it is kept or forgotten.
func TestAttachedToFollowsTheLease(t *testing.T) {
	var p pool
	p.init()
	p.max = 4
	p.granted(lease{id: 1, secs: 2, expires: time.Now().Add(time.Minute), key: "a"})
	if id, ok := p.attachedTo("a"); ok {
		t.Errorf("attachedTo(a) of a lease lent and not attached = %d, true; want none", id)
	}
	p.confirm(1, "b")
	if id, ok := p.attachedTo("b"); ok {
		t.Errorf("attachedTo(b) after confirm(1, b) of a lease lent to a = %d, true; want none", id)
	}
	p.confirm(1, "a")
	if id, ok := p.attachedTo("a"); !ok || id != 1 {
		t.Errorf("attachedTo(a) after confirm(1, a) = %d, %v; want 1, true", id, ok)
	}
	p.keep(1, "a")
	if id, ok := p.attachedTo("a"); ok {
		t.Errorf("attachedTo(a) after its lease was kept = %d, true; want none", id)
	}
}

// A key is known to head its line only once marked so, for the lease it is
// attached to: not a key attached and not marked (it may wait in line),
// and not a key that takes a kept lease whose previous lock held.
func TestHeadingFollowsTheLock(t *testing.T) {
	var p pool
	p.init()
	p.max = 4
	now := time.Now()
	p.granted(lease{id: 1, secs: 2, expires: now.Add(time.Minute), key: "a"})
	p.confirm(1, "a")
	if _, ok := p.heading("a"); ok {
		t.Errorf("heading(a) of a key attached and not marked = true; want false: it may wait in line")
	}
	p.heads(1, "b")
	if _, ok := p.heading("b"); ok {
		t.Errorf("heading(b) after heads(1, b) of a lease lent to a = true; want false")
	}
	p.heads(1, "a")
	if id, ok := p.heading("a"); !ok || id != 1 {
		t.Errorf("heading(a) after heads(1, a) = %d, %v; want 1, true", id, ok)
	}
	p.keep(1, "a")
	if _, ok := p.heading("a"); ok {
		t.Errorf("heading(a) after its lease was kept = true; want false")
	}
	l, ok, _ := p.take("c", 2, now, time.Second)
	if !ok || l.id != 1 {
		t.Fatalf("take(c) = %+v, %v; want lease 1, kept", l, ok)
	}
	p.confirm(1, "c")
	if _, ok := p.heading("c"); ok {
		t.Errorf("heading(c) of a key on a kept lease whose previous lock held = true; want false: c may wait in line")
	}
}
