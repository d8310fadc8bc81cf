package postgres_test

import (
	"testing"

	"github.com/lockkit/lock/internal/testing/capdoc"
	"github.com/lockkit/lock/stores/postgres"
)

// The package documentation names the optional capabilities the store
// implements, and only those.
func TestDocumentedCapabilities(t *testing.T) {
	capdoc.Check(t, (*postgres.Store)(nil), "doc.go")
}
