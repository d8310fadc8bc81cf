package tokengen_test

import (
	"crypto/rand"
	"encoding/base64"
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
func BenchmarkRandom(b *testing.B) {
	for _, c := range []struct {
		name  string
		token func() string
	}{
		{"Random", func() string { t, _ := tokengen.Random{}.Token(); return t }},
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
