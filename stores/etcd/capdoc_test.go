package etcd_test

import (
	"testing"

	"github.com/lockkit/lock/internal/testing/capdoc"
	"github.com/lockkit/lock/stores/etcd"
)

// The package documentation names the optional capabilities the store
// implements, and only those.
func TestDocumentedCapabilities(t *testing.T) {
	capdoc.Check(t, (*etcd.Store)(nil), "doc.go")
}
