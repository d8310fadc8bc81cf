package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// holderQuery checks what a lock.HolderReader tells: the public part of
// the holder's token (after its last '~') while the lock is held, "" for
// a token without one, held = false once the lock is released or expired,
// and never anything of the token's secret.
func holderQuery(t *testing.T, h *harness) {
	hr := h.store.(lock.HolderReader)
	check := func(r, when, want string, wantHeld bool) {
		t.Helper()
		got, held, err := hr.Holder(h.ctx(), r)
		if err != nil || got != want || held != wantHeld {
			t.Fatalf("Holder(r) %s = %q, %v, %v; want %q, %v, nil", when, got, held, errString(err), want, wantHeld)
		}
	}
	const holder = "host-1 4242 lockctl 2026-11-24T20:00:00Z é"
	r := h.res("r")
	check(r, "of a resource never locked", "", false)

	// The secret has a '~' of its own: only the part after the last one
	// is public.
	a := "se~cret-" + h.tok("a") + "~" + holder
	h.must(fmt.Sprintf("Acquire(r, %q, %v)", a, h.long), h.store.Acquire(h.ctx(), r, a, h.long))
	check(r, fmt.Sprintf("while %q holds r (the public part only, never the secret)", a), holder, true)
	h.must("Release(r, a)", h.store.Release(h.ctx(), r, a))
	check(r, "after Release(r, a)", "", false)

	b := h.tok("b")
	h.must(fmt.Sprintf("Acquire(r, %q, %v)", b, h.long), h.store.Acquire(h.ctx(), r, b, h.long))
	check(r, fmt.Sprintf("while %q, a token without a holder part, holds r (never the secret)", b), "", true)
	h.must("Release(r, b)", h.store.Release(h.ctx(), r, b))

	r = h.res("expires")
	h.must(fmt.Sprintf("Acquire(expires, a, %v)", h.ttl), h.store.Acquire(h.ctx(), r, a, h.ttl))
	h.waitExpired(r, time.Now(), h.ttl)
	check(r, "once Exists(r) says the lock expired", "", false)
}
