package tokengen_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/lockkit/lock/tokengen"
)

func TestRandomUniqueURLSafe128Bits(t *testing.T) {
	seen := make(map[string]bool)
	for range 10000 {
		tok, err := tokengen.Random{}.Token()
		if err != nil {
			t.Fatalf("Random.Token() error = %v", err)
		}
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatalf("Random.Token() = %q: not URL-safe base64: %v", tok, err)
		}
		if len(b) < 16 {
			t.Fatalf("Random.Token() = %q carries %d bits; want >= 128", tok, len(b)*8)
		}
		if seen[tok] {
			t.Fatalf("Random.Token() returned %q twice", tok)
		}
		seen[tok] = true
	}
}

// Every bit of a token is random: over many tokens each of the first 21
// characters (six bits each) takes all 64 values, and the last (the two
// bits left of 128) takes four.
func TestRandomUsesEveryBit(t *testing.T) {
	var seen [22]map[byte]bool
	for i := range seen {
		seen[i] = make(map[byte]bool)
	}
	for range 20000 {
		tok, _ := tokengen.Random{}.Token()
		for i := range len(tok) {
			seen[i][tok[i]] = true
		}
	}
	for i, s := range seen {
		want := 64
		if i == 21 {
			want = 4
		}
		if len(s) != want {
			t.Errorf("character %d of 20000 tokens took %d values; want %d", i, len(s), want)
		}
	}
}

// Suffixed tokens are Random tokens followed by the suffix, unique, with
// every bit of their random part used, whatever the suffix's length (a
// long one makes batches of one token).
func TestSuffixed(t *testing.T) {
	for _, suffix := range []string{"~host 42", "~" + strings.Repeat("h", 256), ""} {
		g := tokengen.NewSuffixed(suffix)
		seen := make(map[string]bool)
		var chars [22]map[byte]bool
		for i := range chars {
			chars[i] = make(map[byte]bool)
		}
		for range 20000 {
			tok, err := g.Token()
			if err != nil || len(tok) != 22+len(suffix) || !strings.HasSuffix(tok, suffix) {
				t.Fatalf("NewSuffixed(%.10q).Token() = %q, %v; want 22 characters and the suffix, nil", suffix, tok, err)
			}
			if _, err := base64.RawURLEncoding.DecodeString(tok[:22]); err != nil {
				t.Fatalf("NewSuffixed(%.10q).Token() = %q: the random part is not URL-safe base64: %v", suffix, tok, err)
			}
			if seen[tok] {
				t.Fatalf("NewSuffixed(%.10q).Token() returned %q twice", suffix, tok)
			}
			seen[tok] = true
			for i := range 22 {
				chars[i][tok[i]] = true
			}
		}
		for i, s := range chars {
			if want := map[bool]int{true: 4, false: 64}[i == 21]; len(s) != want {
				t.Errorf("NewSuffixed(%.10q): character %d of 20000 tokens took %d values; want %d", suffix, i, len(s), want)
			}
		}
	}
}

func TestFixed(t *testing.T) {
	if tok, err := tokengen.Fixed("me").Token(); tok != "me" || err != nil {
		t.Errorf(`Fixed("me").Token() = %q, %v; want "me", nil`, tok, err)
	}
	if _, err := tokengen.Fixed("").Token(); err == nil {
		t.Error(`Fixed("").Token() error = nil; want an error`)
	}
}

// BenchmarkRandom compares Random with a token read from crypto/rand for
// every call, the obvious alternative, from parallel goroutines.
// Suffixed is measured beside them: a holder's suffix must cost nothing
// per token.
func BenchmarkRandom(b *testing.B) {
	suffixed := tokengen.NewSuffixed("~build-7 4242 deploy 2026-11-24T20:00:00Z")
	for _, c := range []struct {
		name  string
		token func() string
	}{
		{"Random", func() string { t, _ := tokengen.Random{}.Token(); return t }},
		{"Suffixed", func() string { t, _ := suffixed.Token(); return t }},
		{"crypto-rand", func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			return base64.RawURLEncoding.EncodeToString(b[:])
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = c.token()
				}
			})
		})
	}
}
