package memcache

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
)

func newTestStore(t *testing.T, prefix string) *Store {
	t.Helper()
	s, err := New(gomemcache.New("127.0.0.1:1"), WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeyForms(t *testing.T) {
	s := newTestStore(t, "p:")
	long := strings.Repeat("k", maxKeyLen-len("p:"))
	tests := []struct {
		resource string
		verbatim bool
	}{
		{"orders/42", true},
		{"ünïcödé-名前", true}, // UTF-8 bytes are valid key bytes
		{"\xff\xfe", true},
		{long, true}, // exactly 250 bytes with the prefix
		{long + "k", false},
		{"with space", false},
		{"tab\there", false},
		{"new\nline", false},
		{"del\x7f", false},
		{"\x00", false},
		{"#hash-looking", false}, // '#' first is reserved for hashed keys
		{"a#b", true},
	}
	for _, tt := range tests {
		k := s.key(tt.resource)
		if len(k) > maxKeyLen || !legal(k) {
			t.Errorf("key(%.30q) = %q: not a valid memcached key", tt.resource, k)
		}
		if got := k == "p:"+tt.resource; got != tt.verbatim {
			t.Errorf("key(%.30q) = %q; verbatim = %v, want %v", tt.resource, k, got, tt.verbatim)
		}
		if !tt.verbatim && (len(k) != len("p:")+hashKeyLen || k[len("p:")] != hashMark) {
			t.Errorf("key(%.30q) = %q; want p:# and %d base64url characters", tt.resource, k, hashLen)
		}
	}
}

// The mapping is injective: a resource used verbatim never collides with
// the hashed form of another, hashing does not fold distinct names, and
// no resource maps to the key of the fence counter.
func TestKeyInjective(t *testing.T) {
	prefix := strings.Repeat("x", MaxPrefixLen) // the tightest fit
	for _, p := range []string{"", "lock:", prefix} {
		s := newTestStore(t, p)
		hashedOf := newTestStore(t, p).key("with space") // a hashed key...
		resources := []string{
			"plain", "with space", "with  space", "#", "##", "x",
			hashedOf[len(p):],   // ...and its suffix used as a resource
			hashedOf[len(p)+1:], // the suffix without '#': verbatim
			strings.Repeat("k", 250-len(p)), strings.Repeat("k", 251-len(p)), strings.Repeat("k", 1000),
			fenceKeySuffix, fenceKeySuffix[1:],
		}
		seen := map[string]string{s.fenceKey: "the fence counter"}
		for _, r := range resources {
			k := s.key(r)
			if len(k) > maxKeyLen || !legal(k) {
				t.Errorf("prefix %.10q: key(%.20q) = %.40q: not a valid memcached key", p, r, k)
			}
			if !strings.HasPrefix(k, p) {
				t.Errorf("prefix %.10q: key(%.20q) = %.40q lacks the prefix", p, r, k)
			}
			if other, dup := seen[k]; dup {
				t.Errorf("prefix %.10q: key(%.20q) = key(%.20q) = %.40q", p, r, other, k)
			}
			seen[k] = r
		}
	}
}

func TestNewValidates(t *testing.T) {
	client := gomemcache.New("127.0.0.1:1")
	for _, tt := range []struct {
		name   string
		client *gomemcache.Client
		opts   []Option
		names  string // what the error must name
	}{
		{"nil client", nil, nil, "nil client"},
		{"prefix with a space", client, []Option{WithPrefix("my locks:")}, "WithPrefix"},
		{"prefix with a newline", client, []Option{WithPrefix("locks\n")}, "WithPrefix"},
		{"prefix too long", client, []Option{WithPrefix(strings.Repeat("p", MaxPrefixLen+1))}, "WithPrefix"},
		{"negative fence guard", client, []Option{WithFenceGuard(-time.Second)}, "WithFenceGuard(-1s)"},
		{"empty name", client, []Option{WithName("")}, `WithName("")`},
		{"empty server", client, []Option{WithServer("")}, `WithServer("")`},
	} {
		s, err := New(tt.client, tt.opts...)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tt.names) {
			t.Errorf("New with %s = %v, %v; want an error matching lock.ErrInvalid naming %s", tt.name, s, err, tt.names)
		}
	}
	s, err := New(client, WithPrefix(""), WithName("mc-1"))
	if err != nil || s.String() != "mc-1" || s.key("r") != "r" {
		t.Errorf(`New(client, WithPrefix(""), WithName("mc-1")) = %v, %v; want a store named mc-1 with keys equal to resources`, s, err)
	}
	if s, _ := New(client); s.key("r") != DefaultPrefix+"r" || s.String() != "memcache" {
		t.Errorf("New(client): key(r) = %q, name %q; want %q, memcache", s.key("r"), s.String(), DefaultPrefix+"r")
	}
}

func TestMaxPrefixLen(t *testing.T) {
	if MaxPrefixLen != 206 || hashLen != len(newTestStore(t, "").key(" "))-1 {
		t.Errorf("MaxPrefixLen = %d, hashed form %d bytes; want 206 and 44", MaxPrefixLen, len(newTestStore(t, "").key(" ")))
	}
}
