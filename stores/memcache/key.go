package memcache

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/lockkit/lock"
)

// Keys. memcached keys are at most 250 bytes with no spaces or control
// characters. A resource becomes the key prefix+resource when that is a
// valid key and resource does not start with '#'; otherwise the key is
// prefix + "#" + the unpadded base64url SHA-256 of resource (44 bytes
// after the prefix). The mapping is injective: the byte after the prefix
// is '#' in every hashed key and in no verbatim one, verbatim keys differ
// when their resources do, and hashed keys differ unless SHA-256 collides.

// MaxPrefixLen is the longest key prefix, in bytes: every key must leave
// room under memcached's 250 bytes for the hashed form of a resource ('#'
// and 43 characters).
const MaxPrefixLen = maxKeyLen - hashKeyLen

const (
	maxKeyLen  = 250 // memcached's limit
	hashMark   = '#'
	hashLen    = 43 // base64.RawURLEncoding.EncodedLen(sha256.Size)
	hashKeyLen = 1 + hashLen
)

// key returns the memcached key of resource.
func (s *Store) key(resource string) string {
	if len(s.prefix)+len(resource) <= maxKeyLen && resource[0] != hashMark && legal(resource) {
		return s.prefix + resource
	}
	sum := sha256.Sum256([]byte(resource))
	b := make([]byte, 0, len(s.prefix)+hashKeyLen)
	b = append(b, s.prefix...)
	b = append(b, hashMark)
	b = base64.RawURLEncoding.AppendEncode(b, sum[:])
	return string(b)
}

// legal reports whether every byte of k may appear in a memcached key:
// none is a space, a control character or DEL (bytes of UTF-8 sequences
// are fine).
func legal(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// checkPrefix validates a key prefix.
func checkPrefix(prefix string) error {
	switch {
	case len(prefix) > MaxPrefixLen:
		return fmt.Errorf("%w: memcache.New: WithPrefix: the prefix is %d bytes: want at most %d", lock.ErrInvalid, len(prefix), MaxPrefixLen)
	case !legal(prefix):
		return fmt.Errorf("%w: memcache.New: WithPrefix(%q): the prefix has a space or control character, which memcached keys cannot hold", lock.ErrInvalid, prefix)
	}
	return nil
}
