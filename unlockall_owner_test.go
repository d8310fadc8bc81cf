package lock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// UnlockAll and Shutdown end the Runs holding the locks they release, and
// only those: a Run holding a lock of another locker under the same
// resource and token (a fixed token, as tests use) goes on.
func TestUnlockAllEndsOnlyItsOwnRuns(t *testing.T) {
	for _, op := range []string{"UnlockAll", "Shutdown"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				same := &lock.Options{Tokens: tokengen.Fixed("same-token")}
				a := mustSingle(t, memory.New(), same)
				b := mustSingle(t, memory.New(), same)
				running := make(chan struct{})
				result := make(chan error, 1)
				go func() {
					result <- lock.Run(ctx, a, "r", time.Minute, func(ctx context.Context, _ lock.Lock) error {
						close(running)
						<-ctx.Done()
						return context.Cause(ctx)
					})
				}()
				<-running
				_, err := b.TryLock(ctx, "r", time.Minute)
				wantNil(t, "b.TryLock(r)", err)
				if op == "UnlockAll" {
					wantNil(t, "b.UnlockAll", b.UnlockAll(ctx))
				} else {
					wantNil(t, "b.Shutdown", b.Shutdown(ctx))
				}
				synctest.Wait()
				select {
				case err := <-result:
					t.Fatalf("Run on locker a ended with %v after b.%s; want it still running: b never held a's lock", err, op)
				default:
				}
				wantNil(t, "a.UnlockAll", a.UnlockAll(ctx))
				if err := <-result; err == nil {
					t.Errorf("Run on locker a after a.UnlockAll = nil; want its lock lost")
				}
			})
		})
	}
}
