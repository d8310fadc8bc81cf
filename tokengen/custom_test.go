package tokengen_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// The zero Suffixed makes Random tokens without a suffix instead of
// panicking.
func TestZeroSuffixed(t *testing.T) {
	var s tokengen.Suffixed
	var a, b string
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("zero Suffixed.Token() panicked: %v; want a token", p)
			}
		}()
		a, _ = s.Token()
		b, _ = s.Token()
	}()
	for _, tok := range []string{a, b} {
		if raw, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(raw) != 16 {
			t.Errorf("zero Suffixed.Token() = %q; want 128 bits of URL-safe base64", tok)
		}
	}
	if a == b {
		t.Errorf("zero Suffixed.Token() returned %q twice", a)
	}
}

// generator is a custom TokenGenerator.
type generator func() (string, error)

func (g generator) Token() (string, error) { return g() }

// A locker checks what a custom generator makes: an empty token is
// refused (ErrInvalid) before anything is sent, a generator's failure is
// reported with its cause, and a holder name is appended to custom tokens
// as to Random ones.
func TestLockersCheckCustomTokens(t *testing.T) {
	ctx := context.Background()
	m := memory.New()
	empty, err := lock.NewSingle(m, &lock.Options{Tokens: generator(func() (string, error) { return "", nil })})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.TryLock(ctx, "r", time.Minute); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("TryLock with a generator of empty tokens = %v; want ErrInvalid", err)
	}
	if r := m.Resources(); len(r) > 0 {
		t.Errorf("store holds %q after an empty token was refused; want nothing", r)
	}
	broken := errors.New("entropy exhausted")
	failing, _ := lock.NewSingle(m, &lock.Options{Tokens: generator(func() (string, error) { return "", broken })})
	if _, err := failing.TryLock(ctx, "r", time.Minute); !errors.Is(err, broken) || !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("TryLock with a failing generator = %v; want ErrUnavailable with its error", err)
	}
	named, _ := lock.NewSingle(m, &lock.Options{Tokens: generator(func() (string, error) { return "a~b", nil }), Holder: "host-1"})
	l, err := named.TryLock(ctx, "r", time.Minute)
	if err != nil {
		t.Fatalf("TryLock with a custom generator and a holder = %v", err)
	}
	if !strings.HasPrefix(l.Token, "a~b") || lock.HolderOf(l.Token) != "host-1" {
		t.Errorf("token %q with holder host-1: HolderOf = %q; want the custom token followed by ~host-1", l.Token, lock.HolderOf(l.Token))
	}
}
