package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lockkit/lock/tokengen"
)

// Who holds a lock. A locker with Options.Holder set makes every token
// of the form secret + "~" + holder: the secret still protects Release and
// Extend, and the holder is public, so a store can tell who holds a lock
// ([HolderReader]) without revealing what would let anyone release it.

// MaxHolderLen is the longest Options.Holder accepted, in bytes.
const MaxHolderLen = 256

// holderSep separates a token's secret from its holder.
const holderSep = '~'

// HolderOf returns the public part of token: what follows its last '~',
// or "" if it has none. Tokens made by a locker with Options.Holder set
// end in "~" and the holder; tokengen.Random tokens contain no '~'. A
// token of one's own [TokenGenerator] that contains '~' has what follows
// its last '~' read as public (by HolderOf, the Holder methods and lockctl
// status): keep '~' out of a generator's tokens.
func HolderOf(token string) string {
	i := strings.LastIndexByte(token, holderSep)
	if i < 0 {
		return ""
	}
	return token[i+1:]
}

// HolderReader is a Store that can tell who holds a resource.
//
// Holder returns [HolderOf] the token that holds resource and true, or ""
// and false if the resource is free (released or expired). It never
// returns anything of the token's secret: a token without a holder part
// reads "", true.
//
// Fallback: without it, the holder is unknown: the lockers' Holder
// methods return an error matching [errors.ErrUnsupported], and lockctl
// status shows no holder.
type HolderReader interface {
	Holder(ctx context.Context, resource string) (holder string, held bool, err error)
}

// checkHolder validates Options.Holder: non-empty, at most MaxHolderLen
// bytes of printable UTF-8 (unicode.IsPrint: the ASCII space is the one
// space it takes), without '~'.
func checkHolder(h string) error {
	switch {
	case h == "":
		return errors.New("is empty")
	case len(h) > MaxHolderLen:
		return fmt.Errorf("is %d bytes long: want at most %d", len(h), MaxHolderLen)
	case !utf8.ValidString(h):
		return fmt.Errorf("%q is not valid UTF-8", h)
	case strings.ContainsRune(h, holderSep):
		return fmt.Errorf("%q contains %q, which separates a token's secret from its holder", h, holderSep)
	}
	for _, r := range h {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%q contains the unprintable character %U", h, r)
		}
	}
	return nil
}

// holderTokens returns tokens that end in "~" and holder: a Random
// generator with the suffix built into its batches, or tokens with the
// suffix appended.
func holderTokens(tokens TokenGenerator, holder string) TokenGenerator {
	suffix := string(holderSep) + holder
	if _, ok := tokens.(tokengen.Random); ok {
		return tokengen.NewSuffixed(suffix)
	}
	return suffixedTokens{tokens, suffix}
}

// suffixedTokens appends a suffix to the tokens of a generator.
type suffixedTokens struct {
	TokenGenerator
	suffix string
}

func (s suffixedTokens) Token() (string, error) {
	t, err := s.TokenGenerator.Token()
	if err != nil || t == "" {
		return t, err // core.token reports both
	}
	return t + s.suffix, nil
}

// Holder reports who holds resource: the public part of the holder's
// token (see Options.Holder) and true, or "" and false if resource is
// free. A lock taken without a holder name reads "", true. It returns an
// error matching errors.ErrUnsupported if the store is not a
// [HolderReader].
func (s *SingleLocker) Holder(ctx context.Context, resource string) (holder string, held bool, err error) {
	const op = "holder"
	if err := s.checkQuery(ctx, op, resource); err != nil {
		return "", false, err
	}
	r, ok := s.store.Store.(HolderReader)
	if !ok {
		return "", false, &Error{Op: op, Resource: resource, Err: fmt.Errorf("%s cannot tell who holds a lock: %w", s.store.name, errors.ErrUnsupported)}
	}
	t0 := s.obs.start()
	holder, held, err = r.Holder(ctx, resource)
	s.obs.storeCall(ctx, op, resource, &s.store, "holder", t0, err)
	if err != nil {
		return "", false, s.fail(ctx, op, resource, err)
	}
	return holder, held, nil
}

// Holder reports who holds resource: the holder that a quorum of the
// stores report (see [SingleLocker.Holder]) and true, or "" and false if
// no holder can have a quorum (the resource is free, or passing from one
// owner to another). Every store is asked at once, each within the store
// timeout. It returns an error matching errors.ErrUnsupported if fewer
// than a quorum of the stores are [HolderReader]s, and one matching
// ErrUnavailable if stores that failed, or the stores that cannot tell
// (a minority), leave it undecided: only the stores that failed are in
// [Error.Stores].
func (m *MultiLocker) Holder(ctx context.Context, resource string) (holder string, held bool, err error) {
	const op = "holder"
	if err := m.checkQuery(ctx, op, resource); err != nil {
		return "", false, err
	}
	n, readers := len(m.stores), 0
	for _, s := range m.stores {
		if isReader(s) {
			readers++
		}
	}
	if !m.quorum.Met(readers, n) {
		return "", false, &Error{Op: op, Resource: resource, Err: fmt.Errorf("%d of %d stores can tell who holds a lock, short of a quorum: %w", readers, n, errors.ErrUnsupported)}
	}
	type answer struct {
		holder string
		held   bool
	}
	answers, errs := fanoutFunc(ctx, m, op, resource, "holder", func(ctx context.Context, s storeRef) (a answer, err error) {
		r, ok := s.Store.(HolderReader)
		if !ok {
			return a, fmt.Errorf("%s cannot tell who holds a lock: %w", s.name, errors.ErrUnsupported)
		}
		a.holder, a.held, err = r.Holder(ctx, resource)
		return a, err
	})
	votes := make(map[string]int) // by holder, among the stores that hold the resource
	best := 0                     // the most votes of one holder
	var failures []StoreError
	silent := n - readers // the stores that cannot tell, and may hold it
	for i, err := range errs {
		switch a := answers[i]; {
		case err != nil && !isReader(m.stores[i]):
			// It cannot tell, which is no failure: counted in silent.
		case err != nil:
			failures = append(failures, m.storeError(i, err))
		case a.held:
			votes[a.holder]++
			best = max(best, votes[a.holder])
		}
	}
	for h, k := range votes {
		if m.quorum.Met(k, n) {
			return h, true, nil
		}
	}
	if unknown := len(failures) + silent; unknown > 0 && m.quorum.Met(best+unknown, n) {
		// The stores that failed, or cannot tell, could make a quorum for
		// a holder.
		cause := fmt.Errorf("%w: %d of %d stores could not tell who holds the resource (%d cannot read holders)", ErrUnavailable, unknown, n, silent)
		return "", false, m.failure(ctx, op, resource, cause, failures)
	}
	return "", false, nil
}

// isReader reports whether s can tell who holds a lock.
func isReader(s storeRef) bool {
	_, ok := s.Store.(HolderReader)
	return ok
}
