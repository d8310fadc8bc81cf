package etcd

import (
	"context"
	"time"
)

// Watches returns the number of resources the store watches.
func (s *Store) Watches() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.watches)
}

// SetLinger sets how long watches outlive their last waiter, and returns
// the function that restores it. Not for parallel tests.
func SetLinger(d time.Duration) (restore func()) {
	old := linger
	linger = d
	return func() { linger = old }
}

// SetSlack gives the leases of the stores made from now on slack seconds
// of slack, whatever their TTL, and returns the function that restores
// the default. Not for parallel tests.
func SetSlack(slack int64) (restore func()) {
	old := slackOf
	slackOf = func(int64) int64 { return slack }
	return func() { slackOf = old }
}

// Waiting returns the number of callers waiting for resource.
func (s *Store) Waiting(resource string) int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if w := s.hub.watches[s.scope(resource)]; w != nil {
		return len(w.waiters)
	}
	return 0
}

// Renew renews lease id over the store's keepalive streams.
func (s *Store) Renew(ctx context.Context, id int64) (int64, error) {
	return s.renewer.renew(ctx, id)
}

// IdleStreams returns the number of keepalive streams the store keeps
// open between renewals.
func (s *Store) IdleStreams() int {
	s.renewer.mu.Lock()
	defer s.renewer.mu.Unlock()
	return len(s.renewer.idle)
}

// LockKey returns the key of the lock on resource held by token in a
// store of prefix.
func LockKey(prefix, resource, token string) string {
	return (&Store{prefix: prefix}).key(resource, token)
}

// Renewals returns the number of renewals the store has sent.
func (s *Store) Renewals() int64 { return s.renewer.sent.Load() }

// SetFound makes WaitRelease call f between seeing the watch it found
// ready and reading its state, and returns the function that restores it.
// Not for parallel tests.
func SetFound(f func()) (restore func()) {
	old := found
	found = f
	return func() { found = old }
}

// SetOpened makes WaitRelease call f between finding the resource's watch
// and joining its line, and returns the function that restores it. Not
// for parallel tests.
func SetOpened(f func()) (restore func()) {
	old := opened
	opened = f
	return func() { opened = old }
}

// SetWaitLease sets the longest lease of a key waiting in line, in whole
// seconds, for the stores made from now on, and returns the function that
// restores the default. Not for parallel tests.
func SetWaitLease(secs int64) (restore func()) {
	old := waitLease
	waitLease = secs
	return func() { waitLease = old }
}
