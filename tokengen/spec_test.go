package tokengen_test

// Black-box tests of the documented contracts of package tokengen.

import (
	"strings"
	"sync"
	"testing"

	lock "github.com/lockkit/lock"
	"github.com/lockkit/lock/tokengen"
)

var (
	_ lock.TokenGenerator = tokengen.Random{}
	_ lock.TokenGenerator = (*tokengen.Suffixed)(nil)
	_ lock.TokenGenerator = tokengen.Fixed("x")
)

const specAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func specCheckRandomPart(t *testing.T, tok string) {
	t.Helper()
	if len(tok) != 22 {
		t.Fatalf("Random token %q has %d characters; want 22", tok, len(tok))
	}
	if i := strings.IndexFunc(tok, func(r rune) bool { return !strings.ContainsRune(specAlphabet, r) }); i >= 0 {
		t.Fatalf("Random token %q has %q at %d; want URL-safe base64 only", tok, tok[i], i)
	}
}

func TestSpecRandomLengthAndAlphabet(t *testing.T) {
	for range 200 {
		tok, err := tokengen.Random{}.Token()
		if err != nil {
			t.Fatalf("Random.Token() error = %v; want nil", err)
		}
		specCheckRandomPart(t, tok)
	}
}

func TestSpecRandomNoTilde(t *testing.T) {
	for range 200 {
		tok, _ := tokengen.Random{}.Token()
		if strings.Contains(tok, "~") {
			t.Fatalf("Random token %q contains '~'; want none", tok)
		}
	}
}

func TestSpecRandomUniqueAcrossBatches(t *testing.T) {
	seen := make(map[string]bool)
	for i := range 5000 { // many batches of 32
		tok, err := tokengen.Random{}.Token()
		if err != nil {
			t.Fatal(err)
		}
		if seen[tok] {
			t.Fatalf("Random token #%d %q repeats an earlier one; want unique tokens", i, tok)
		}
		seen[tok] = true
	}
}

func TestSpecRandomUniqueConcurrent(t *testing.T) {
	const g, n = 8, 1000
	out := make([][]string, g)
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				tok, err := tokengen.Random{}.Token()
				if err != nil {
					t.Error(err)
					return
				}
				out[i] = append(out[i], tok)
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, g*n)
	for _, toks := range out {
		for _, tok := range toks {
			if seen[tok] {
				t.Fatalf("concurrent Random tokens repeat %q; want unique tokens", tok)
			}
			seen[tok] = true
		}
	}
}

func TestSpecSuffixedFormat(t *testing.T) {
	s := tokengen.NewSuffixed("~host:1")
	for range 100 {
		tok, err := s.Token()
		if err != nil {
			t.Fatalf("Suffixed.Token() error = %v", err)
		}
		if !strings.HasSuffix(tok, "~host:1") {
			t.Fatalf("Suffixed token %q; want suffix ~host:1", tok)
		}
		specCheckRandomPart(t, strings.TrimSuffix(tok, "~host:1"))
		if h := lock.HolderOf(tok); h != "host:1" {
			t.Fatalf("HolderOf(%q) = %q; want host:1", tok, h)
		}
	}
}

func TestSpecSuffixedUnique(t *testing.T) {
	s := tokengen.NewSuffixed("~me")
	seen := map[string]bool{}
	for range 3000 {
		tok, _ := s.Token()
		if seen[tok] {
			t.Fatalf("Suffixed token %q repeats; want unique tokens", tok)
		}
		seen[tok] = true
	}
}

func TestSpecSuffixedLongSuffix(t *testing.T) {
	suffix := "~" + strings.Repeat("x", 4000)
	s := tokengen.NewSuffixed(suffix)
	seen := map[string]bool{}
	for range 300 {
		tok, err := s.Token()
		if err != nil {
			t.Fatalf("Suffixed(4 KB suffix).Token() error = %v", err)
		}
		if !strings.HasSuffix(tok, suffix) || len(tok) != 22+len(suffix) || seen[tok] {
			t.Fatalf("Suffixed(4 KB suffix) token of length %d; want 22+%d, unique, ending in the suffix", len(tok), len(suffix))
		}
		seen[tok] = true
	}
}

func TestSpecSuffixedZeroValueNoSuffix(t *testing.T) {
	var s tokengen.Suffixed
	tok, err := s.Token()
	if err != nil {
		t.Fatalf("zero Suffixed.Token() error = %v", err)
	}
	specCheckRandomPart(t, tok)
}

func TestSpecSuffixedConcurrent(t *testing.T) {
	s := tokengen.NewSuffixed("~c")
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				tok, err := s.Token()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				dup := seen[tok]
				seen[tok] = true
				mu.Unlock()
				if dup {
					t.Errorf("concurrent Suffixed token %q repeats", tok)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestSpecFixed(t *testing.T) {
	for range 3 {
		tok, err := tokengen.Fixed("same").Token()
		if err != nil || tok != "same" {
			t.Fatalf("Fixed(\"same\").Token() = %q, %v; want \"same\", nil", tok, err)
		}
	}
}

func TestSpecFixedEmptyErrors(t *testing.T) {
	if tok, err := tokengen.Fixed("").Token(); err == nil {
		t.Fatalf("Fixed(\"\").Token() = %q, nil; want an error", tok)
	}
}
