package memory_test

import (
	"testing"

	"github.com/lockkit/lock/internal/testing/capdoc"
	"github.com/lockkit/lock/stores/memory"
)

// The package documentation names the optional capabilities the store
// implements, and only those.
func TestDocumentedCapabilities(t *testing.T) {
	capdoc.Check(t, (*memory.Store)(nil), "doc.go")
}
