package goredis

// Subscriptions returns the number of subscriptions to releases the
// process holds, for tests checking that none is left behind.
func Subscriptions() int {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	return len(hub.topics)
}
