package memcache_test

import (
	"testing"

	"github.com/lockkit/lock/internal/testing/capdoc"
	"github.com/lockkit/lock/stores/memcache"
)

// The package documentation names the optional capabilities the store
// implements, and only those.
func TestDocumentedCapabilities(t *testing.T) {
	capdoc.Check(t, (*memcache.Store)(nil), "doc.go")
}
