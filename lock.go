package lock

import "time"

// Lock describes a held lock. It is a plain value: it can be copied,
// serialised (JSON round-trips), handed to another process and released
// there by a locker over the same stores.
type Lock struct {
	// Resource is the name of the locked resource.
	Resource string `json:"resource"`
	// Token is the owner's secret: only a Release or Extend presenting it
	// affects the lock. With Options.Holder set, it ends in "~" and the
	// holder, the public part that [HolderOf] returns.
	Token string `json:"token"`
	// ValidUntil is the time until which the holder may assume it holds the
	// lock exclusively. It is already reduced by the time the acquisition
	// took, the clock-drift allowance and the stores' TTL granularity.
	// Within the acquiring process it carries a monotonic clock reading,
	// which JSON drops (as it keeps the time zone as an offset only): a
	// round-tripped Lock has the same ValidUntil by Equal, not by ==.
	ValidUntil time.Time `json:"validUntil"`
	// Fence is a fencing token: strictly greater than the fence of every
	// earlier lock on the same resource, so a resource guarded by the lock
	// can refuse writes from a holder whose lock has expired (see
	// [FenceGuard]). It is 0 with Options.NoFence, when the store cannot
	// fence ([Fencer]), and for a MultiLocker unless every store can raise
	// fences ([FenceRaiser]). The permits of a [Semaphore] and the locks of
	// an [RWLocker]'s Reader side, several of which hold a resource at
	// once, are ordered less strictly (docs/semaphores.md): a lower fence
	// there does not make its holder stale.
	Fence uint64 `json:"fence,omitempty"`
}

// IsZero reports whether l is the zero Lock.
func (l Lock) IsZero() bool {
	return l.Resource == "" && l.Token == "" && l.ValidUntil.IsZero() && l.Fence == 0
}

// Remaining returns how long the lock is still valid, or a non-positive
// duration once it is not.
func (l Lock) Remaining() time.Duration { return time.Until(l.ValidUntil) }

// Valid reports whether the lock's validity has not yet run out.
// A holder should check it before each protected write.
func (l Lock) Valid() bool { return time.Now().Before(l.ValidUntil) }
