package lock

import (
	"context"
	"time"
)

// Locker takes locks on named resources. [SingleLocker] takes them in one
// store, [MultiLocker] in several at once with a quorum (the Redlock
// algorithm). Lockers are safe for concurrent use.
type Locker interface {
	// Lock acquires resource for ttl, retrying while it is held by another
	// owner as its retry policy says (by default until ctx is done; see
	// [Retry] and [WithRetry]). On failure the error matches ErrNotAcquired
	// (held by another after every allowed attempt), a context error, or
	// ErrUnavailable (stores failed).
	Lock(ctx context.Context, resource string, ttl time.Duration, opts ...LockOption) (Lock, error)

	// TryLock makes exactly one attempt, whatever the retry policy.
	TryLock(ctx context.Context, resource string, ttl time.Duration) (Lock, error)

	// IsLocked reports whether anyone holds resource. A multi-store locker
	// reports true if any store holds it.
	IsLocked(ctx context.Context, resource string) (bool, error)

	// Unlock releases l. It returns an error matching ErrNotHeld if the lock
	// had expired or been taken over, and ErrUnavailable if a store failed
	// and may still hold it (until its TTL runs out). If ctx ends first, it
	// returns ctx's error and the lock may still be held: a deferred Unlock
	// should use a context that outlives the caller's (see the package
	// example, context.WithoutCancel).
	Unlock(ctx context.Context, l Lock) error

	// Extend sets l's time to live to ttl from now and returns the lock with
	// its new validity. It returns an error matching ErrNotHeld if l is no
	// longer held; no expired lock is ever re-created. On any error it
	// returns the zero Lock: keep l, which an error other than ErrNotHeld
	// leaves possibly held, to try again or to Unlock it.
	Extend(ctx context.Context, l Lock, ttl time.Duration) (Lock, error)

	// UnlockAll releases every lock this locker acquired and still holds,
	// for use at shutdown; a lock it only extended (taken by another
	// locker, handed over as a Lock value) stays the acquirer's. Locks
	// found already expired are not reported. A locker counts a lock as
	// held until the validity of its own latest acquisition or extension
	// ends: a lock that another locker extended beyond that is left to
	// expire (or to an Unlock of the Lock value) by both.
	UnlockAll(ctx context.Context) error

	// Shutdown makes the locker refuse new locks and extensions (ErrClosed)
	// and releases every lock it still holds, as UnlockAll does. Unlock
	// keeps working.
	Shutdown(ctx context.Context) error
}

// Quorum decides whether enough stores granted a lock. Met must be
// monotonic: if it is met with g grants it is met with more.
// Package quorum has the usual ones.
type Quorum interface {
	Met(granted, total int) bool
}

// TokenGenerator makes the owner tokens that protect Release and Extend.
// Tokens must be unique across every client of the same stores; package
// tokengen has a random generator (the default) and a fixed one. A token
// must not be empty (a locker reports ErrInvalid), and should contain no
// '~': what follows the last '~' is the public holder part ([HolderOf],
// [HolderReader]; see Options.Holder), which the stores tell anyone. An
// error of Token fails the Lock with ErrUnavailable, the error in its
// chain, where errors.Is finds what it wraps except this package's
// sentinels and the context errors.
type TokenGenerator interface {
	Token() (string, error)
}

// Options configures a locker: pass it to [NewSingle] or [NewMulti]. The
// zero value (or nil) gives the defaults. (The options of one Lock or
// [Run] call are [LockOption] values.)
type Options struct {
	// Tokens makes owner tokens. Default: tokengen.Random.
	Tokens TokenGenerator

	// Holder, if set, is a public name of the owner, such as "host:pid":
	// every token the locker makes ends in "~" and Holder, so that a
	// store can tell who holds a lock ([HolderReader], [HolderOf]) without
	// revealing the token's secret. It must be printable UTF-8
	// (unicode.IsPrint: of the spaces, only the ASCII space) without '~',
	// at most MaxHolderLen bytes. Default: none.
	Holder string

	// Quorum decides when enough stores granted a lock (NewMulti only).
	// It must require more than half of the stores: anything less would let
	// two owners hold a lock at once. Default: quorum.Majority.
	Quorum Quorum

	// DriftFactor is the fraction of the TTL allowed for clock drift
	// between this process and the stores. Every lock's validity is reduced
	// by ttl×DriftFactor + 2ms + the stores' TTL granularity.
	// Must be in [0, 0.5); zero selects the default, 0.01.
	DriftFactor float64

	// StoreTimeout bounds each call to one store made by a MultiLocker, so
	// a dead store costs at most this much (keep it small next to the
	// TTL); for both lockers it also bounds the cleanup calls made after an
	// ambiguous outcome or a cancellation. At most [MaxTTL]. Default: 50ms.
	StoreTimeout time.Duration

	// Retry is the retry policy of Lock when a call passes none.
	// Default: [DefaultRetry], which retries until the context is done
	// (polling every 5–10ms at first on stores that cannot notify).
	Retry *Retry

	// Hook, if set, is told about every store call, quorum decision,
	// retry, acquisition, extension, release and loss. Default: none.
	Hook Hook

	// NoFence makes a locker acquire without fencing: its locks carry
	// Fence 0. A SingleLocker then makes plain acquisitions even when its
	// store can fence ([Fencer]); a MultiLocker, whose locks are fenced
	// when every store can raise fences ([FenceRaiser]), makes plain
	// acquisitions and no raises. Mutual exclusion does not depend on
	// fences; they let a protected resource refuse a holder whose lock
	// expired. Fencing costs nothing on the memory store; on Redis it adds
	// an INCR of the server's fence counter to the acquisition's round
	// trip, and on memcached one more request, each shared by the
	// acquisitions of a batch under load (see docs/fencing.md and
	// docs/performance.md). Default: fence whenever the stores can.
	NoFence bool

	// LockDelay keeps a lock whose holder vanished — it stopped extending
	// it and never released it: it crashed, paused, or lost its stores —
	// from being taken again until LockDelay after its validity would
	// have ended (Chubby's lock-delay), so that a holder that wakes up
	// late finds nobody else inside for that long. Unlock frees the lock
	// at once as usual. Until the stores let the lock go, its holder's
	// Unlock and Extend succeed even past Lock.ValidUntil (nobody else can
	// have taken it), and report ErrNotHeld after that. The stores keep
	// each lock for ttl + LockDelay; the validity the holder sees is the
	// ttl's (Lock.ValidUntil does not move), and so are Run's extensions;
	// IsLocked reports such a lock held until the store lets it go.
	// ttl + LockDelay must not exceed [MaxTTL]. Default: 0, no delay.
	LockDelay time.Duration
}

const (
	defaultDriftFactor  = 0.01
	driftConstant       = 2 * time.Millisecond
	defaultStoreTimeout = 50 * time.Millisecond
)

// MaxTTL is the longest TTL the lockers accept.
const MaxTTL = 365 * 24 * time.Hour

// LockOption is an option of one Lock, [Run] or [RunOnce] call, or of an
// [Election]: [WithRetry], [MaxHold], [ExtendEvery], [MinInterval]. (A
// locker's own configuration is [Options].)
type LockOption func(*callOptions)

// Option is LockOption's former name, kept for code written before the
// rename; it will be removed before v1.
//
// Deprecated: use [LockOption].
type Option = LockOption

type callOptions struct {
	retry       *Retry
	maxHold     time.Duration
	extendEvery time.Duration
	minInterval time.Duration
}

// WithRetry sets the retry policy of one Lock or Run call, or of an
// Election's campaigns, in place of the locker's Options.Retry. RunOnce
// makes one attempt and ignores it.
func WithRetry(r Retry) LockOption {
	return func(o *callOptions) { o.retry = &r }
}

// MaxHold limits how long [Run] keeps a lock for its function: at d after
// acquisition it stops extending it and cancels the function's context
// with cause [ErrMaxHold]; the lock is left to run out, which is no loss
// (no [ErrLost], no [EventLost]). [RunOnce] and an [Election]'s terms take it
// too (an Election whose term it ended gives the other campaigners a head
// start before its next Campaign — four times its resignation's time, from
// 10ms to a quarter of the ttl — so that leaders rotate on every store,
// not only where a release hands the lock to the next in line); once
// RunOnce's function has returned, [MinInterval] still keeps
// the lock, if it is still held, to the interval's end, even past d.
// Lock ignores it.
func MaxHold(d time.Duration) LockOption {
	return func(o *callOptions) { o.maxHold = d }
}

// ExtendEvery sets how often [Run] extends its lock: at least 1ms, and
// less than the lock's validity; 0 keeps the default, a third of the
// validity (the TTL less the drift allowance; see [Run]). Lock ignores it.
func ExtendEvery(d time.Duration) LockOption {
	return func(o *callOptions) { o.extendEvery = d }
}

func collect(opts []LockOption) callOptions {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
