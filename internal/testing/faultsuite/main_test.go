package faultsuite_test

import (
	"os"
	"testing"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// The scenarios run one after another, never in parallel: each checks
// that it leaves no goroutine behind, which other tests running at the
// same time would spoil, and their timings should not depend on each
// other's load. The Redis Cluster is shared (it takes seconds to build);
// scenarios keep apart on it by key prefix, and those that disturb it
// wait until it is healthy again.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.CloseShared()
	os.Exit(code)
}
