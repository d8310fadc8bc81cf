package tokengen_test

import (
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

func TestFixed(t *testing.T) {
	if tok, err := tokengen.Fixed("me").Token(); tok != "me" || err != nil {
		t.Errorf(`Fixed("me").Token() = %q, %v; want "me", nil`, tok, err)
	}
	if _, err := tokengen.Fixed("").Token(); err == nil {
		t.Error(`Fixed("").Token() error = nil; want an error`)
	}
}

func BenchmarkRandom(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tokengen.Random{}.Token()
	}
}
