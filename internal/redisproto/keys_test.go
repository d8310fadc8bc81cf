package redisproto

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

var keyCases = []string{"x", "{x}", "{", "}", "{}", "}a{", "a}b", "%", "%7D", "%25", "%}", "}%", "\x00", "\xff\xfe", "a:fence", "a:waiters", "é"}

// TestKeysInjective: distinct resources never share a key, every key of
// a resource is in the lock's slot, and the escaping decodes back.
func TestKeysInjective(t *testing.T) {
	unescape := strings.NewReplacer("%7D", "}", "%25", "%")
	for _, prefix := range []string{"", DefaultPrefix, "app/%:"} {
		seen := make(map[string]string)
		for _, r := range keyCases {
			lockKey := LockKey(prefix, r)
			l2, fenceKey := LockAndFence(prefix, r)
			l3, waitersKey := LockAndWaiters(prefix, r)
			if l2 != lockKey || l3 != lockKey || waitersKey != WaitersOf(lockKey) || fenceKey != lockKey+FenceSuffix {
				t.Fatalf("resource %q: keys %q %q %q %q %q disagree", r, lockKey, l2, l3, fenceKey, waitersKey)
			}
			tag, ok := strings.CutPrefix(lockKey, prefix+"{")
			if !ok || !strings.HasSuffix(tag, "}") || strings.Contains(tag[:len(tag)-1], "}") {
				t.Fatalf("lock key %q of %q is not prefix{escaped}", lockKey, r)
			}
			if got := unescape.Replace(tag[:len(tag)-1]); got != r {
				t.Fatalf("lock key %q of %q decodes to %q", lockKey, r, got)
			}
			slot := redistest.Slot(lockKey)
			for _, k := range []string{fenceKey, waitersKey, ChannelOf(lockKey, "id")} {
				if redistest.Slot(k) != slot {
					t.Fatalf("%q is not in the slot of %q", k, lockKey)
				}
			}
			for _, k := range []string{lockKey, fenceKey, waitersKey} {
				if other, dup := seen[k]; dup {
					t.Fatalf("prefix %q: resources %q and %q share key %q", prefix, other, r, k)
				}
				seen[k] = r
			}
		}
	}
}

func TestValidateResource(t *testing.T) {
	if err := ValidateResource("goredis", strings.Repeat("r", MaxResourceLen)); err != nil {
		t.Errorf("ValidateResource(MaxResourceLen bytes) = %v; want nil", err)
	}
	err := ValidateResource("goredis", strings.Repeat("r", MaxResourceLen+1))
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "4097 bytes") || !strings.Contains(err.Error(), "goredis store") {
		t.Errorf("ValidateResource(too long) = %v; want lock.ErrInvalid naming the length and the store", err)
	}
	if err := ValidateResource("goredis", ""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("ValidateResource(\"\") = %v; want lock.ErrInvalid", err)
	}
	for _, p := range []string{"a{", "}"} {
		if err := CheckPrefix("WithPrefix", p); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("CheckPrefix(%q) = %v; want lock.ErrInvalid", p, err)
		}
	}
}

func TestScriptsSHA(t *testing.T) {
	for _, sc := range []Script{Acquire, Release, Wait, Pass, Leave, Extend, Guarded, ForceRelease} {
		sum := sha1.Sum([]byte(sc.Src))
		if sc.SHA != hex.EncodeToString(sum[:]) || sc.NKeys < 1 {
			t.Errorf("script %.40q: SHA %s, %d keys; want the SHA-1 of its source and keys", sc.Src, sc.SHA, sc.NKeys)
		}
	}
}
