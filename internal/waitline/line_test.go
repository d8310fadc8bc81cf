package waitline

import "testing"

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLine checks the line of waiters: one wake per release, longest
// waiting first, a wake its waiter leaves unused goes on, and a wake
// nobody can use is handed on.
func TestLine(t *testing.T) {
	var l Line
	handedOn := 0
	handOn := func() { handedOn++ }

	w1, w2, w3 := l.Join(false), l.Join(false), l.Join(false)
	l.WakeOne(handOn)
	if !isClosed(w1.C) || isClosed(w2.C) || isClosed(w3.C) {
		t.Fatal("WakeOne did not wake exactly the longest-waiting caller")
	}
	// w1 leaves unused (its ctx ended): the wake goes to w2.
	if !l.Leave(w1, true, handOn) {
		t.Fatal("Leave(woken, passOn) = false; want true")
	}
	if !isClosed(w2.C) || isClosed(w3.C) {
		t.Fatal("the wake w1 left unused did not go to w2")
	}
	// w2 uses its wake (the caller retries): nothing passes on.
	if !l.Leave(w2, false, handOn) || isClosed(w3.C) {
		t.Fatal("a used wake was passed on")
	}
	// w3 leaves unwoken: it is simply removed.
	if l.Leave(w3, true, handOn) || l.Len() != 0 {
		t.Fatalf("Leave of an unwoken caller: %d left in line; want 0", l.Len())
	}
	if handedOn != 0 {
		t.Fatalf("handOn called %d times while callers were in line; want 0", handedOn)
	}

	// No caller: the wake is handed on, once.
	l.WakeOne(handOn)
	if handedOn != 1 {
		t.Fatalf("WakeOne on an empty line called handOn %d times; want 1", handedOn)
	}
	// A woken caller that leaves unused with nobody behind hands it on too.
	w4 := l.Join(false)
	l.WakeOne(handOn)
	l.Leave(w4, true, handOn)
	if handedOn != 2 {
		t.Fatalf("an unused wake with nobody in line: handOn called %d times in all; want 2", handedOn)
	}

	w5, w6 := l.Join(false), l.Join(false)
	l.WakeAll()
	if !isClosed(w5.C) || !isClosed(w6.C) || l.Len() != 0 {
		t.Fatal("WakeAll did not wake every caller")
	}
	l.WakeOne(nil) // nil handOn: nothing to do, no panic

	// A caller joining at the front is woken first.
	w7, w8 := l.Join(false), l.Join(true)
	if !l.WakeOne(nil) || !isClosed(w8.C) || isClosed(w7.C) {
		t.Fatal("WakeOne did not wake the caller that joined at the front")
	}
}
