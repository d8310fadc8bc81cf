package conformance_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/internal/testing/brokenstore"
	"github.com/lockkit/lock/stores/memory"
)

// permitTracker is a memory store that remembers the resources it granted
// permits on, so that a test can count the permits left on them.
type permitTracker struct {
	*memory.Store
	mu        sync.Mutex
	resources map[string]bool
}

func (s *permitTracker) AcquirePermit(ctx context.Context, resource, token string, limit int, ttl time.Duration) (uint64, error) {
	fence, err := s.Store.AcquirePermit(ctx, resource, token, limit, ttl)
	if err == nil {
		s.mu.Lock()
		s.resources[resource] = true
		s.mu.Unlock()
	}
	return fence, err
}

// left reports the locks and the permits still held.
func (s *permitTracker) left(t *testing.T) (locks []string, permits map[string]int) {
	permits = make(map[string]int)
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.resources {
		n, err := s.Store.Permits(context.Background(), r)
		if err != nil {
			t.Errorf("Permits(%q) = %v", r, err)
		}
		if n > 0 {
			permits[r] = n
		}
	}
	return s.Store.Resources(), permits
}

// The suite leaves nothing behind: every rule that passes releases the
// locks and permits it took (or lets them expire), so a store under test
// on a shared server is left as it was found.
func TestSuiteLeavesNothingHeld(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s := &permitTracker{Store: memory.New(), resources: make(map[string]bool)}
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			if locks, permits := s.left(t); len(locks) > 0 || len(permits) > 0 {
				t.Errorf("the rule passed and left locks %q and permits %v held; want none: the suite must release what it takes", locks, permits)
			}
		})
		return s
	}, &conformance.Options{Synctest: true})
}

// The same for the queuing store: the queue rules leave nothing either.
// (A semaphore over plain locks keeps its limit in a marker lock, which
// lives for the TTL of the latest permit, released or not, as
// lock.NewSemaphore documents: the suite cannot release it.)
func TestQueueRulesLeaveNothingHeld(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store {
		s := brokenstore.NewQueueStore()
		t.Cleanup(func() {
			left := slices.DeleteFunc(s.Mem().Resources(), func(r string) bool { return strings.HasSuffix(r, "~limit") })
			if !t.Failed() && len(left) > 0 {
				t.Errorf("the rule passed and left locks %q held; want none: the suite must release what it takes", left)
			}
		})
		return s
	}, &conformance.Options{Synctest: true})
}
