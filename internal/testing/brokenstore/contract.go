package brokenstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Stores that break the basic contract: who may acquire, release and
// extend, and for how long.

// ReleaseWithoutTokenCheck frees a held resource whatever the token: a
// holder whose lock expired deletes its successor's.
func ReleaseWithoutTokenCheck() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Release = func(_ context.Context, resource, _ string) error {
			if mem.Expire(resource) {
				return nil
			}
			return lock.ErrNotHeld
		}
	})
}

// OverwriteHeld takes a resource even when someone holds it.
func OverwriteHeld() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			mem.Expire(resource)
			return mem.Acquire(ctx, resource, token, ttl)
		}
	})
}

// TakesOverNearExpiry takes a held resource whose lock has less than
// window left, as a store that counts a lock about to expire as expired
// already does: the holder, still within its TTL, loses the lock.
func TakesOverNearExpiry(window time.Duration) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			if left, held, err := mem.TTL(ctx, resource); err == nil && held && left < window {
				mem.Expire(resource)
			}
			return mem.Acquire(ctx, resource, token, ttl)
		}
	})
}

// ExtendAfterExpiry re-creates an expired lock when asked to extend it.
func ExtendAfterExpiry() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			err := mem.Extend(ctx, resource, token, ttl)
			if errors.Is(err, lock.ErrNotHeld) {
				return mem.Acquire(ctx, resource, token, ttl)
			}
			return err
		}
	})
}

// ContentionOnTimeout reports every failed acquisition, a dead context
// included, as contention.
func ContentionOnTimeout() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			if err := mem.Acquire(ctx, resource, token, ttl); err != nil {
				return lock.ErrNotAcquired
			}
			return nil
		}
	})
}

// scaleTTL replaces every method that sets a TTL by the memory store's
// with the TTL changed by scale.
func scaleTTL(mem *memory.Store, f *Funcs, scale func(time.Duration) time.Duration) {
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Acquire(ctx, resource, token, scale(ttl))
	}
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
		return mem.AcquireFenced(ctx, resource, token, scale(ttl))
	}
	f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Extend(ctx, resource, token, scale(ttl))
	}
}

// IgnoresTTL keeps locks a thousand times longer than asked.
func IgnoresTTL() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		scaleTTL(mem, f, func(ttl time.Duration) time.Duration { return 1000 * ttl })
	})
}

// ExpiresEarly keeps locks for share of their TTL (0.6: 60%).
func ExpiresEarly(share float64) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		scaleTTL(mem, f, func(ttl time.Duration) time.Duration { return time.Duration(share * float64(ttl)) })
	})
}

// CapsTTL keeps no lock longer than limit, whatever its TTL: a lock
// taken for longer expires while its holder still counts on it.
func CapsTTL(limit time.Duration) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		scaleTTL(mem, f, func(ttl time.Duration) time.Duration { return min(ttl, limit) })
	})
}

// TruncatesTTL keeps a TTL of a second or more in whole seconds,
// truncated, as a client that sends EXPIRE with the TTL's whole seconds
// for long TTLs (and PEXPIRE for short ones) does, and declares no
// granularity: a lock taken for 5.5s lives 5s, and a second owner takes
// it while the first still counts on it. Its TTL reader tells the time
// the lock really has left.
func TruncatesTTL() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		scaleTTL(mem, f, func(ttl time.Duration) time.Duration {
			if ttl >= time.Second {
				return ttl.Truncate(time.Second)
			}
			return ttl
		})
	})
}

// RefusedAcquireSetsTTL sets the holder's expiry to the TTL of an Acquire
// it refuses, as a store that sends SETNX and then EXPIRE does.
func RefusedAcquireSetsTTL() *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		fenced := f.AcquireFenced
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := fenced(ctx, resource, token, ttl)
			if errors.Is(err, lock.ErrNotAcquired) {
				_ = mem.Extend(ctx, resource, h.get(resource), ttl)
			}
			return fence, err
		}
	})
}

// RefusedOwnAcquireSetsTTL sets the holder's expiry to the TTL of an
// Acquire it refuses when the token is the holder's own, as a store that
// answers a retried acquisition by refreshing the lock does.
func RefusedOwnAcquireSetsTTL() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
			if errors.Is(err, lock.ErrNotAcquired) {
				_ = mem.Extend(ctx, resource, token, ttl) // changes the lock only if token holds it
			}
			return fence, err
		}
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			_, err := f.AcquireFenced(ctx, resource, token, ttl)
			return err
		}
	})
}

// DeadContextSucceeds answers Release and Extend with success when their
// context has ended, without making them, as a store that reads a
// canceled request as one that needs no answer: a holder that asked to
// extend believes its lock renewed.
func DeadContextSucceeds() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Release = func(ctx context.Context, resource, token string) error {
			if ctx.Err() != nil {
				return nil
			}
			return mem.Release(ctx, resource, token)
		}
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			if ctx.Err() != nil {
				return nil
			}
			return mem.Extend(ctx, resource, token, ttl)
		}
	})
}

// ExtendNeverShortens ignores an Extend to a TTL shorter than the time
// the lock has left (and still reports success).
func ExtendNeverShortens() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			if left, held, err := mem.TTL(ctx, resource); err == nil && held {
				ttl = max(ttl, left)
			}
			return mem.Extend(ctx, resource, token, ttl)
		}
	})
}

// TTLHeldAfterRelease reports a resource that was ever locked as held by
// TTL, with a second left, after it was released or expired.
func TTLHeldAfterRelease() *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.TTL = func(ctx context.Context, resource string) (time.Duration, bool, error) {
			left, held, err := mem.TTL(ctx, resource)
			if err == nil && !held && h.get(resource) != "" {
				return time.Second, true, nil
			}
			return left, held, err
		}
	})
}

// TTLTooSmall reports a thousandth of the time a lock has left.
func TTLTooSmall() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.TTL = func(ctx context.Context, resource string) (time.Duration, bool, error) {
			left, held, err := mem.TTL(ctx, resource)
			return left / 1000, held, err
		}
	})
}

// TTLRoundedUp reports the time a lock has left rounded up to whole
// seconds: a lock of 200ms reads 1s.
func TTLRoundedUp() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.TTL = func(ctx context.Context, resource string) (time.Duration, bool, error) {
			left, held, err := mem.TTL(ctx, resource)
			if held && left%time.Second != 0 {
				left = left.Truncate(time.Second) + time.Second
			}
			return left, held, err
		}
	})
}

// TTLAsSet reports, for a held lock, the TTL it was last set with by
// Acquire or Extend, not the time it has left.
func TTLAsSet() *Store {
	var (
		mu  sync.Mutex
		set = map[string]time.Duration{}
	)
	note := func(resource string, ttl time.Duration, err error) {
		if err == nil {
			mu.Lock()
			set[resource] = ttl
			mu.Unlock()
		}
	}
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
			fence, err := mem.AcquireFenced(ctx, resource, token, ttl)
			note(resource, ttl, err)
			return fence, err
		}
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			_, err := f.AcquireFenced(ctx, resource, token, ttl)
			return err
		}
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			err := mem.Extend(ctx, resource, token, ttl)
			note(resource, ttl, err)
			return err
		}
		f.TTL = func(ctx context.Context, resource string) (time.Duration, bool, error) {
			left, held, err := mem.TTL(ctx, resource)
			mu.Lock()
			defer mu.Unlock()
			if ttl, ok := set[resource]; ok && held {
				left = ttl
			}
			return left, held, err
		}
	})
}

// LongTokensTruncated compares only the first n bytes of tokens: two
// owners whose tokens share those bytes release each other's locks.
func LongTokensTruncated(n int) *Store {
	cut := func(token string) string { return token[:min(len(token), n)] }
	return New(func(_ *Store, mem *memory.Store, f *Funcs) { retoken(mem, f, cut) })
}

// TokensFoldCase compares tokens without regard to case, as a SQL store
// whose token column has a case-insensitive collation does.
func TokensFoldCase() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) { retoken(mem, f, strings.ToLower) })
}

// retoken replaces every method that takes a token by the memory store's
// with the token changed by key.
func retoken(mem *memory.Store, f *Funcs, key func(string) string) {
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
		return mem.AcquireFenced(ctx, resource, key(token), ttl)
	}
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Acquire(ctx, resource, key(token), ttl)
	}
	f.Release = func(ctx context.Context, resource, token string) error {
		return mem.Release(ctx, resource, key(token))
	}
	f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Extend(ctx, resource, key(token), ttl)
	}
}

// Stores that map two resource names to one lock.

// rename replaces every method that takes a resource by the memory
// store's with the name changed by key.
func rename(mem *memory.Store, f *Funcs, key func(string) string) {
	f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Acquire(ctx, key(resource), token, ttl)
	}
	f.AcquireFenced = func(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
		return mem.AcquireFenced(ctx, key(resource), token, ttl)
	}
	f.Release = func(ctx context.Context, resource, token string) error {
		return mem.Release(ctx, key(resource), token)
	}
	f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
		return mem.Extend(ctx, key(resource), token, ttl)
	}
	f.Exists = func(ctx context.Context, resource string) (bool, error) {
		return mem.Exists(ctx, key(resource))
	}
	f.TTL = func(ctx context.Context, resource string) (time.Duration, bool, error) {
		return mem.TTL(ctx, key(resource))
	}
	f.WaitRelease = func(ctx context.Context, resource string) error {
		return mem.WaitRelease(ctx, key(resource))
	}
	f.RaiseFence = func(ctx context.Context, resource string, fence uint64) error {
		return mem.RaiseFence(ctx, key(resource), fence)
	}
}

// FoldsCase keeps resources under their names in lower case.
func FoldsCase() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) { rename(mem, f, strings.ToLower) })
}

// TrimsSpace keeps resources under their names without surrounding white
// space.
func TrimsSpace() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) { rename(mem, f, strings.TrimSpace) })
}

// Truncates keeps resources under the first n bytes of their names, as a
// store with a key limit that cuts longer keys would.
func Truncates(n int) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) { rename(mem, f, truncate(n)) })
}

// TruncatesRefusingLong is Truncates made correct: it refuses, through
// lock.ResourceValidator, every name it would truncate. It breaks
// nothing.
func TruncatesRefusingLong(n int) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		rename(mem, f, truncate(n))
		f.ValidateResource = func(resource string) error {
			if len(resource) > n {
				return fmt.Errorf("%w: resource name is %d bytes: want at most %d", lock.ErrInvalid, len(resource), n)
			}
			return nil
		}
	})
}

func truncate(n int) func(string) string {
	return func(s string) string { return s[:min(len(s), n)] }
}

// AcquireChecksThenSets acquires in two steps, a look at the resource and
// then, window later, an unconditional set (GET, then SET without NX):
// every acquisition that looked while the resource was free takes it,
// each overwriting the one before, so concurrent callers all win.
func AcquireChecksThenSets(window time.Duration) *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		var set sync.Mutex // the SET is one step: no caller's expiry falls between another's two
		f.Acquire = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			held, err := mem.Exists(ctx, resource)
			switch {
			case err != nil:
				return err
			case held:
				return lock.ErrNotAcquired
			}
			time.Sleep(window)
			set.Lock()
			defer set.Unlock()
			mem.Expire(resource)
			return mem.Acquire(ctx, resource, token, ttl)
		}
	})
}

// ExtendIgnored answers an Extend by the holder with success and leaves
// the lock's TTL as it was, as a store that checks the token and forgets
// to set the expiry does: the holder believes its lock renewed.
func ExtendIgnored() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Extend = func(ctx context.Context, resource, token string, ttl time.Duration) error {
			left, held, err := mem.TTL(ctx, resource)
			switch {
			case err != nil:
				return err
			case !held:
				return lock.ErrNotHeld
			}
			return mem.Extend(ctx, resource, token, left)
		}
	})
}

// ExtendWithoutTokenCheck extends whoever holds the resource, whatever
// the token (a bare PEXPIRE): a holder whose lock expired sets its
// successor's TTL.
func ExtendWithoutTokenCheck() *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Extend = func(ctx context.Context, resource, _ string, ttl time.Duration) error {
			return mem.Extend(ctx, resource, h.get(resource), ttl)
		}
	})
}

// ReleaseIgnoresExpiry frees a resource for the token that last took it,
// even after its lock expired, and reports success: a store that keeps
// expired locks and compares tokens without looking at the expiry. The
// holder never learns it had lost the lock.
func ReleaseIgnoresExpiry() *Store {
	var h holders
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		tracked(mem, f, &h)
		f.Release = func(ctx context.Context, resource, token string) error {
			err := mem.Release(ctx, resource, token)
			if errors.Is(err, lock.ErrNotHeld) && h.get(resource) == token {
				err = nil
			}
			if err == nil {
				h.set(resource, "")
			}
			return err
		}
	})
}

// ReleaseOfFreeSucceeds reports success for the release of a free
// resource (a DEL of a missing key read as done): a second release, or
// one of a lock never taken, claims to have freed something.
func ReleaseOfFreeSucceeds() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		f.Release = func(ctx context.Context, resource, token string) error {
			err := mem.Release(ctx, resource, token)
			if errors.Is(err, lock.ErrNotHeld) {
				if held, xerr := mem.Exists(ctx, resource); xerr == nil && !held {
					return nil
				}
			}
			return err
		}
	})
}

// OneLockPerDirectory keeps one lock per name up to its last '/': two
// resources of one directory exclude each other, and the release of one
// frees the other.
func OneLockPerDirectory() *Store {
	return New(func(_ *Store, mem *memory.Store, f *Funcs) {
		rename(mem, f, func(r string) string {
			if i := strings.LastIndexByte(r, '/'); i >= 0 {
				return r[:i]
			}
			return r
		})
	})
}
