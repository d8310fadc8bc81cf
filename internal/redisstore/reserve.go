package redisstore

import "time"

// A release that wakes a waiter hands it the lock: the release script
// sets the lock to a reservation for the woken subscription
// (ReservationPrefix followed by its id) for ReservationTTL, in place of
// deleting it. A SET NX of any other caller then finds the lock taken and
// gets in line behind the waiters, so the lock goes round in the order
// the waiters got in line, across processes; the woken process takes it
// with the claim script, which accepts its own reservation as free, sent
// by its first acquisition of the lock after the wake (see take). A
// wake the subscription cannot use (no caller waits any more) hands the
// reservation on to the next in line (pass.lua), unless an acquisition of
// the process claims it first; one nobody claims (the
// woken process died, or its caller gave up after the wake) lapses after
// ReservationTTL, and the lock is free again.
//
// Until claimed, the lock reads as held (Exists) by a holder without a
// holder part (Holder: "", true). Stores under the restart guard or
// WithWaitReplicas do not reserve: their releases delete the lock, and
// the head start of handoffs keeps the releaser from taking the woken
// waiter's turn. The calls started with Start, a MultiLocker's, do
// neither: its stores' lines have different heads, and reservations for
// different processes on different stores would leave no majority to
// anyone until they lapse.

// ReservationPrefix begins the value of a lock reserved for a woken
// subscription.
const ReservationPrefix = "lockkit:handoff:"

// ReservationTTL is how long a reservation lasts unclaimed: long enough
// for a woken process to take the lock under load (a handoff takes well
// under a millisecond on a quiet network), short enough that a process
// that died with its subscription in line delays the others little.
const ReservationTTL = 100 * time.Millisecond

var reservationTTLArg = itoa(Millis(ReservationTTL))

// SetReservationTTL makes s's releases reserve a lock for d instead of
// ReservationTTL: for tests that must see a reservation before it lapses
// on a loaded machine. Call it before s is used.
func SetReservationTTL(s *Store, d time.Duration) { s.reservationArg = itoa(Millis(d)) }

// reserves reports whether s's releases hand the lock to the waiter they
// wake, and its acquisitions claim the reservations for their process.
func (s *Store) reserves() bool { return s.guard == 0 && s.replicas == 0 }

// releaseCmd returns the release of the lock at key, whose waiters'
// queue is waiters, held under token: the release script, with the
// reservation's arguments if s reserves.
func (s *Store) releaseCmd(key, waiters, token string) Cmd {
	keys := []string{key, waiters, s.counterKey(key)}
	if s.reserves() {
		return script(releaseScript, keys, token, ReservationPrefix, s.reservationArg)
	}
	return script(releaseScript, keys, token)
}

// take returns the acquisition of the lock at key: SET NX PX GET (see
// setNX), or, if s reserves and a release has reserved the lock for the
// process's subscription to it with a wake that no acquisition of the
// process has tried to claim since (see subscriptions.claim), the claim
// script, which also takes the lock reserved for that subscription and
// otherwise answers as SET NX PX GET does. So the first acquisition of the
// process after the wake claims it, whichever caller makes it, and the
// claim is sent only for a lock this process waits for: an acquisition of
// a lock nobody of the process waits for costs one atomic load more.
func (s *Store) take(key, token string, ttl time.Duration) Cmd {
	if s.reserves() {
		if id := hub.claim(s, key); id != "" {
			return script(claimScript, []string{key}, token, s.ttlArg(ttl), ReservationPrefix+id)
		}
	}
	return s.setNX(key, token, ttl)
}

// unclaimed gives back the claim of cmd, if it is one of take's claims,
// whose outcome no answer told: see subscriptions.unclaim.
func (s *Store) unclaimed(cmd *Cmd) {
	if cmd.Script == claimScript {
		hub.unclaim(s, cmd.Keys[0], cmd.Args[2])
	}
}
