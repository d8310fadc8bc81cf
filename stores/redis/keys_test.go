package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// decode recovers the resource from a lock key, failing the test if the
// key does not have the documented layout: decoding succeeding for every
// key proves the layout injective.
func decode(t *testing.T, prefix, key string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(key, prefix+"{")
	if !ok || !strings.HasSuffix(rest, "}") {
		t.Fatalf("key %q is not %q + {escaped}", key, prefix)
	}
	e := rest[:len(rest)-1]
	if strings.Contains(e, "}") {
		t.Fatalf("key %q has a } inside its hash tag", key)
	}
	r := strings.NewReplacer("%7D", "}", "%25", "%")
	return r.Replace(e)
}

func checkKeys(t *testing.T, s *Store, resource string) {
	t.Helper()
	lockKey, fenceKey := s.keys(resource)
	if lockKey != s.lockKey(resource) {
		t.Fatalf("keys(%q) lock key %q != lockKey %q", resource, lockKey, s.lockKey(resource))
	}
	if fenceKey != lockKey+fenceSuffix {
		t.Fatalf("fence key %q of %q is not the lock key + %q", fenceKey, resource, fenceSuffix)
	}
	if got := decode(t, s.prefix, lockKey); got != resource {
		t.Fatalf("lock key %q of %q decodes to %q", lockKey, resource, got)
	}
	if a, b := redistest.Slot(lockKey), redistest.Slot(fenceKey); a != b {
		t.Fatalf("resource %q: lock key in slot %d, fence key in slot %d", resource, a, b)
	}
}

var keyCases = []string{"x", "{x}", "{", "}", "{}", "}a{", "a}b", "%", "%7D", "%25", "%}", "}%", "\x00", "\xff\xfe", "a:fence", "é"}

func TestKeysInjective(t *testing.T) {
	for _, prefix := range []string{"", "lock:", "app/%:"} {
		s := &Store{config: config{prefix: prefix}}
		seen := make(map[string]string)
		for _, r := range keyCases {
			checkKeys(t, s, r)
			lockKey, fenceKey := s.keys(r)
			for _, k := range []string{lockKey, fenceKey} {
				if other, dup := seen[k]; dup {
					t.Fatalf("prefix %q: resources %q and %q share key %q", prefix, other, r, k)
				}
				seen[k] = r
			}
		}
	}
}

func FuzzKeys(f *testing.F) {
	for _, r := range keyCases {
		f.Add(r, "x")
	}
	s := &Store{config: config{prefix: DefaultPrefix}}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		checkKeys(t, s, a)
		checkKeys(t, s, b)
		if a != b && s.lockKey(a) == s.lockKey(b) {
			t.Fatalf("resources %q and %q share lock key %q", a, b, s.lockKey(a))
		}
	})
}

func TestMillisRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		d    int64 // nanoseconds
		want int64
	}{{1, 1}, {999_999, 1}, {1_000_000, 1}, {1_000_001, 2}, {2_500_000, 3}} {
		if got := millis(time.Duration(tc.d)); got != tc.want {
			t.Errorf("millis(%dns) = %d; want %d", tc.d, got, tc.want)
		}
	}
}
