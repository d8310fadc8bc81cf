package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
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
			l2, waitersKey := LockAndWaiters(prefix, r)
			if l2 != lockKey || waitersKey != WaitersOf(lockKey) {
				t.Fatalf("resource %q: keys %q %q %q disagree", r, lockKey, l2, waitersKey)
			}
			tag, ok := strings.CutPrefix(lockKey, prefix+"{")
			if !ok || !strings.HasSuffix(tag, "}") || strings.Contains(tag[:len(tag)-1], "}") {
				t.Fatalf("lock key %q of %q is not prefix{escaped}", lockKey, r)
			}
			if got := unescape.Replace(tag[:len(tag)-1]); got != r {
				t.Fatalf("lock key %q of %q decodes to %q", lockKey, r, got)
			}
			slot := Slot(lockKey)
			for _, k := range []string{CounterKey(lockKey, true), waitersKey, ChannelOf(lockKey, "id")} {
				if Slot(k) != slot {
					t.Fatalf("%q is not in the slot of %q", k, lockKey)
				}
			}
			for _, k := range []string{lockKey, waitersKey} {
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
	for _, sc := range Scripts() {
		sum := sha1.Sum([]byte(sc.Src))
		if sc.SHA != hex.EncodeToString(sum[:]) || !strings.Contains(sc.Src, "KEYS[1]") {
			t.Errorf("script %s: SHA %s; want the SHA-1 of its source, which uses KEYS[1]", sc.Name, sc.SHA)
		}
	}
}

// TestSlot checks the slot function against values from the documentation of CLUSTER KEYSLOT,
// and that every slot has a fence counter of its own in it.
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{"somekey": 11058, "foo{hash_tag}": 2515, "hash_tag": 2515, "foo": 12182} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d; want %d", key, got, want)
		}
	}
	seen := make(map[string]bool)
	for s, k := range counterKeys() {
		if Slot(k) != s || seen[k] {
			t.Fatalf("counter key %q of slot %d: in slot %d, or repeated", k, s, Slot(k))
		}
		seen[k] = true
	}
	if CounterKey("lock:{x}", false) != FenceKey {
		t.Errorf("CounterKey on a single server = %q; want %q", CounterKey("lock:{x}", false), FenceKey)
	}
}

func TestMillisRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		d    int64 // nanoseconds
		want int64
	}{{1, 1}, {999_999, 1}, {1_000_000, 1}, {1_000_001, 2}, {2_500_000, 3}} {
		if got := Millis(time.Duration(tc.d)); got != tc.want {
			t.Errorf("Millis(%dns) = %d; want %d", tc.d, got, tc.want)
		}
	}
}

// TestPrefixCannotMakeCounterKeys: a cluster's fence counters are
// FenceKey + ":{t}", and the lock of resource t under the prefix
// FenceKey + ":" would be one of them (a lock refused for ever, a counter
// broken by a token): WithPrefix refuses that prefix.
func TestPrefixCannotMakeCounterKeys(t *testing.T) {
	prefix := FenceKey + ":"
	tag := strings.TrimSuffix(strings.TrimPrefix(CounterKey(LockKey("", "x"), true), prefix+"{"), "}")
	if key := LockKey(prefix, tag); key != CounterKey(key, true) {
		t.Fatalf("LockKey(%q, %q) = %q; want the fence counter of its slot, %q, for this test to mean anything", prefix, tag, key, CounterKey(key, true))
	}
	if err := CheckPrefix("WithPrefix", prefix); !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), prefix) {
		t.Errorf("CheckPrefix(%q) = %v; want lock.ErrInvalid naming the prefix", prefix, err)
	}
}
