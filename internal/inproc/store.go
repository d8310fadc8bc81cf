package inproc

import (
	"context"
	"time"
)

// Store is a lock store in the process that reads the process's clock
// (Now) once per call, at the moment it decides, and keeps with each lock
// the owner (a locker) that took it. A store offers it by embedding an
// Offer (see OfferOf), which adds nothing to its exported API; a locker
// finds it with Of.
//
// AcquireStamped and ReleaseStamped behave exactly as the Store methods
// they name, and also return start, an Instant no later than the moment
// the store applied the call (a lock it took expires no earlier than its
// TTL after start), and elapsed, how long after start the call returned.
// A store that decides at the reading it reports returns an elapsed of
// zero; one that simulates a slow network (the memory store with an
// injected fault) reports the reading taken when the call began and the
// time the call took, as a locker would have measured them. Both are zero
// if the call failed before the store read its clock.
type Store interface {
	// AcquireStamped is Fencer.AcquireFenced (its fence is 0 if the
	// store does not fence), recording owner as the lock's owner.
	AcquireStamped(ctx context.Context, owner uint64, resource, token string, ttl time.Duration) (fence uint64, start Instant, elapsed time.Duration, err error)
	// ReleaseStamped is Store.Release.
	ReleaseStamped(ctx context.Context, resource, token string) (start Instant, elapsed time.Duration, err error)
	// ExtendStamped is Extender.Extend by owner: an extension by the
	// lock's owner moves the owner's own record of it (see HeldBy), one
	// by anyone else does not.
	ExtendStamped(ctx context.Context, owner uint64, resource, token string, ttl time.Duration) error
	// HeldBy returns the locks that owner took and the store still holds,
	// until the owner's own latest acquisition or extension of each runs
	// out (another's extension keeps the lock's owner but does not count),
	// with Start and Expires as of that acquisition or extension.
	HeldBy(owner uint64) []Held
}

// Held is a lock a Store holds: when it was last taken or extended
// (Start), and when it expires.
type Held struct {
	Resource, Token string
	Fence           uint64
	Start, Expires  Instant
}

// Offer carries a store's Store. A store embeds it (under an unexported
// alias, so that the field is not exported either) and sets it with
// OfferOf.
type Offer struct {
	store any // the store that offers s, and no type that embeds it
	s     Store
}

// OfferOf returns the Offer by which store offers s.
func OfferOf(store any, s Store) Offer { return Offer{store, s} }

func (o Offer) offer() Offer { return o }

// Of returns the Store that store offers, or nil. A type that embeds
// such a store offers none: its own methods may differ from the store's.
func Of(store any) Store {
	if x, ok := store.(interface{ offer() Offer }); ok {
		if o := x.offer(); o.store == store {
			return o.s
		}
	}
	return nil
}
