package conformance_test

import (
	"testing"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/brokenstore"
)

// A correct store with fences and nothing else optional (no TTL reader, so
// that the rules tell a lock's TTL by its expiry) passes.
func TestFencesOnlyStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return brokenstore.FencesOnly(brokenstore.New(nil)) }, &conformance.Options{Synctest: true})
}
