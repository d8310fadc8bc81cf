package waitline

import "sync"

// Line is the line of a process's callers waiting for the release of one
// lock, behind one subscription to its release notifications: each
// notification wakes one caller, the one that has waited longest, and a
// wake that no caller can use is handed on (to the next subscription in
// line on a Redis server, say). The zero Line is empty and ready to use;
// it is safe for concurrent use.
type Line struct {
	mu      sync.Mutex
	waiting []*Place // longest waiting first
}

// Place is one caller's place in a Line.
type Place struct {
	// C is closed when a release wakes the caller.
	C     chan struct{}
	woken bool // guarded by Line.mu
}

// Join puts a caller at the end of the line, or at its front.
func (l *Line) Join(front bool) *Place {
	p := &Place{C: make(chan struct{})}
	l.mu.Lock()
	if front {
		l.waiting = append([]*Place{p}, l.waiting...)
	} else {
		l.waiting = append(l.waiting, p)
	}
	l.mu.Unlock()
	return p
}

// Leave takes p out of the line and reports whether a release had woken
// it. A caller woken but leaving without using the wake (it will not try
// to acquire: passOn) hands the wake to the next caller, or to handOn if
// there is none.
func (l *Line) Leave(p *Place, passOn bool, handOn func()) (woken bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.woken {
		if passOn {
			l.wakeLocked(handOn)
		}
		return true
	}
	for i, x := range l.waiting {
		if x == p {
			l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
			break
		}
	}
	return false
}

// WakeOne wakes the caller that has waited longest, and reports whether
// there was one. If there is none (it left, its context ended), it calls
// handOn, which should pass the wake to the next subscription in line on
// the server, so that a release is never lost on a caller that went away.
// handOn is called with the line locked and must not block.
func (l *Line) WakeOne(handOn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wakeLocked(handOn)
}

func (l *Line) wakeLocked(handOn func()) bool {
	if len(l.waiting) == 0 {
		if handOn != nil {
			handOn()
		}
		return false
	}
	p := l.waiting[0]
	l.waiting[0] = nil
	l.waiting = l.waiting[1:]
	p.woken = true
	close(p.C)
	return true
}

// WakeAll wakes every waiting caller: the subscription ended, and each
// must look for itself.
func (l *Line) WakeAll() {
	l.mu.Lock()
	for _, p := range l.waiting {
		p.woken = true
		close(p.C)
	}
	l.waiting = nil
	l.mu.Unlock()
}

// First reports whether p is first in line: no caller still in line has
// waited longer.
func (l *Line) First(p *Place) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting) > 0 && l.waiting[0] == p
}

// Len returns the number of callers in line.
func (l *Line) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}
