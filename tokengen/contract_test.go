package tokengen_test

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/tokengen"
)

func TestContractRandomTokens(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				tok, err := tokengen.Random{}.Token()
				if err != nil {
					t.Errorf("Random.Token() = %v", err)
					return
				}
				if len(tok) != 22 {
					t.Errorf("Random token %q has %d characters; want 22", tok, len(tok))
				}
				b, err := base64.RawURLEncoding.DecodeString(tok)
				if err != nil || len(b) != 16 {
					t.Errorf("Random token %q is not 128 bits of URL-safe base64: %v", tok, err)
				}
				if strings.Contains(tok, "~") {
					t.Errorf("Random token %q contains '~'", tok)
				}
				mu.Lock()
				if seen[tok] {
					t.Errorf("Random token %q repeated", tok)
				}
				seen[tok] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestContractFixedAndSuffixed(t *testing.T) {
	if _, err := tokengen.Fixed("").Token(); err == nil {
		t.Errorf(`Fixed("").Token() = nil error; want an error`)
	}
	if tok, err := tokengen.Fixed("me").Token(); tok != "me" || err != nil {
		t.Errorf(`Fixed("me").Token() = %q, %v`, tok, err)
	}
	s := tokengen.NewSuffixed("~host:1")
	a, err := s.Token()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Token()
	if a == b || !strings.HasSuffix(a, "~host:1") || len(a) != 22+len("~host:1") {
		t.Errorf("Suffixed tokens %q, %q; want distinct random tokens ending in ~host:1", a, b)
	}
	if lock.HolderOf(a) != "host:1" {
		t.Errorf("HolderOf(%q) = %q", a, lock.HolderOf(a))
	}
	long := "~" + strings.Repeat("x", 256)
	tok, err := tokengen.NewSuffixed(long).Token()
	if err != nil || !strings.HasSuffix(tok, long) || len(tok) != 22+len(long) {
		t.Errorf("Suffixed(long) = %q, %v", tok, err)
	}
}
