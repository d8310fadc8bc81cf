package redis

import "testing"

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestQueueHandsWakeOn checks the waiters' queue: one wake per release,
// longest waiting first, and a wake its waiter leaves unused goes on.
func TestQueueHandsWakeOn(t *testing.T) {
	var tp topic
	w1, w2, w3 := tp.enqueue(), tp.enqueue(), tp.enqueue()
	tp.wakeOne()
	if !isClosed(w1.ch) || isClosed(w2.ch) || isClosed(w3.ch) {
		t.Fatal("wakeOne did not wake exactly the longest-waiting waiter")
	}
	// w1 leaves unused (its ctx ended): the wake goes to w2.
	if !tp.dequeue(w1, true) {
		t.Fatal("dequeue of a woken waiter reported it not woken")
	}
	if !isClosed(w2.ch) || isClosed(w3.ch) {
		t.Fatal("the wake w1 left unused did not go to w2")
	}
	// w2 uses its wake (the caller retries): nothing passes on.
	if !tp.dequeue(w2, false) || isClosed(w3.ch) {
		t.Fatal("a used wake was passed on")
	}
	// w3 leaves unwoken: it is simply removed.
	if tp.dequeue(w3, true) || len(tp.queue) != 0 {
		t.Fatalf("dequeue of an unwoken waiter: queue left with %d", len(tp.queue))
	}
	tp.wakeOne() // no waiter: nothing to do, no panic
	w4, w5 := tp.enqueue(), tp.enqueue()
	tp.wakeAll()
	if !isClosed(w4.ch) || !isClosed(w5.ch) || len(tp.queue) != 0 {
		t.Fatal("wakeAll did not wake every waiter")
	}
}
