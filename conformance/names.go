package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockkit/lock"
)

// plainNames are names every store must accept: the shapes of ordinary
// resource names.
var plainNames = []string{"plain", "invoice/42", "colon:separated:name", "a_b", "a-b.c", "case", "x", "123"}

// unusualNames are names a store must either keep apart from every other
// name or refuse through lock.ResourceValidator (with an error wrapping
// lock.ErrInvalid).
var unusualNames = []string{
	"with space", "two  spaces", "{x}", "{", "}", "{}", "a{b}c", "{a}{b}",
	"ünïcödé-名前-🔒", "tab\there", "new\nline", "\x00nul\x00", "\xff\xfe not UTF-8", "del\x7f",
	strings.Repeat("k", 1024), strings.Repeat("é", 300),
}

// lookalikes are groups of names that a careless store maps to one key.
// Each must be kept apart from the others of its group, or refused.
var lookalikes = []struct {
	how   string
	names []string
}{
	{"in case", []string{"case", "Case", "CASE"}},
	{"in surrounding white space", []string{"x", " x", "x ", " x ", "\tx"}},
	{"after byte 250", []string{strings.Repeat("k", 250) + "a", strings.Repeat("k", 250) + "b"}},
	{"in the last of 1024 bytes", []string{strings.Repeat("k", 1023) + "a", strings.Repeat("k", 1023) + "b"}},
	{"in Unicode normalization", []string{"caf\u00e9", "cafe\u0301"}},
	{"by escaping", []string{"a_b", "a b", "a%20b", "a+b"}},
	{"by escaping a slash", []string{"invoice/42", "invoice%2F42"}},
	{"after a NUL byte", []string{"nul", "nul\x00tail"}},
	{"by a leading #", []string{"plain", "#plain"}},
}

// unusualResourceNames holds every name at once, each under a token of
// its own, and checks that they are all distinct locks: none is refused
// because another is held, and releasing one frees no other.
func unusualResourceNames(t *testing.T, h *harness) {
	v, validates := h.store.(lock.ResourceValidator)
	plain := make(map[string]bool)
	for _, n := range plainNames {
		plain[n] = true
	}
	// Every name once, each with the lookalikes of it seen before it.
	var names []string
	partners := make(map[string][]string)
	how := make(map[string]string)
	add := func(n string) {
		if _, dup := how[n]; !dup {
			how[n] = ""
			names = append(names, n)
		}
	}
	for _, n := range plainNames {
		add(n)
	}
	for _, g := range lookalikes {
		for i, n := range g.names {
			add(n)
			partners[n] = append(partners[n], g.names[:i]...)
			if i > 0 {
				how[n] = g.how
			}
		}
	}
	for _, n := range unusualNames {
		add(n)
	}

	var held []string
	tokens := make(map[string]string)
	for _, n := range names {
		if validates {
			if err := v.ValidateResource(n); err != nil {
				switch {
				case plain[n]:
					t.Fatalf("ValidateResource(%s) = %v; want nil: every store must accept a name this plain", h.name(n), err)
				case !errors.Is(err, lock.ErrInvalid):
					t.Fatalf("ValidateResource(%s) = %v; want nil, or an error matching lock.ErrInvalid", h.name(n), err)
				}
				continue // refused, as a store may
			}
		}
		tok := h.tok("a")
		err := h.store.Acquire(h.ctx(), n, tok, h.long)
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Acquire(%s, a) = ErrNotAcquired while only other names are held; want nil: %s",
				h.name(n), collision(h, n, tok, held, tokens, partners, how))
		}
		h.must(fmt.Sprintf("Acquire(%s, a) while the other names are held", h.name(n)), err)
		tokens[n] = tok
		held = append(held, n)
	}
	for _, n := range held {
		if !h.exists(n) {
			t.Errorf("Exists(%s) = false after Acquire; want true", h.name(n))
		}
	}
	// Each name is released in turn by its own token. A release that
	// freed another name too makes that name's own release fail; the
	// lookalikes of a released name are looked at at once, to name the
	// pair. (Looking at every name after every release would cost a
	// slow store more than the locks' TTL.)
	for i, n := range held {
		for _, p := range partners[n] {
			if tok, ok := tokens[p]; ok {
				h.want(fmt.Sprintf("Release(%s) with the token of %s, which differs from it only %s", h.name(n), h.name(p), how[n]),
					h.store.Release(h.ctx(), n, tok), lock.ErrNotHeld)
			}
		}
		err := h.store.Release(h.ctx(), n, tokens[n])
		if errors.Is(err, lock.ErrNotHeld) && i > 0 {
			t.Fatalf("Release(%s, a) = %v; want nil: it was held once every name was, and only other names were released since (the store maps it and one of them to one lock)", h.name(n), err)
		}
		h.must(fmt.Sprintf("Release(%s, a)", h.name(n)), err)
		if h.exists(n) {
			t.Errorf("Exists(%s) = true after Release; want false", h.name(n))
		}
		for _, m := range held[i+1:] {
			if !slices.Contains(partners[m], n) && !slices.Contains(partners[n], m) {
				continue
			}
			if !h.exists(m) {
				t.Fatalf("Exists(%s) = false after Release(%s); want true: releasing one name freed another (the store maps both to one lock)", h.name(m), h.name(n))
			}
		}
	}
}

// collision finds, for a message, the held name that n is confused with:
// it releases the held names one by one until n can be acquired.
func collision(h *harness, n, tok string, held []string, tokens map[string]string, partners map[string][]string, how map[string]string) string {
	for i := len(held) - 1; i >= 0; i-- {
		m := held[i]
		if err := h.store.Release(h.ctx(), m, tokens[m]); err != nil {
			break
		}
		if h.store.Acquire(h.ctx(), n, tok, h.long) == nil {
			because := ""
			if slices.Contains(partners[n], m) {
				because = ", which differs from it only " + how[n] + ","
			}
			return fmt.Sprintf("the store maps it and %s%s to one lock (it must keep them apart, or refuse one through lock.ResourceValidator)", h.name(m), because)
		}
	}
	return "the store maps it and another name to one lock (it must keep them apart, or refuse one through lock.ResourceValidator)"
}
