package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// The reason a lost lock gives names what happened once, and says
// "extensions failed" only when they did: here the store cannot extend.
func TestLossReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the lock expires in fake time
		locker, err := lock.NewSingle(struct{ lock.Store }{memory.New()}, nil) // hides Extend
		if err != nil {
			t.Fatal(err)
		}
		var cause error
		err = lock.Run(context.Background(), locker, "r", 100*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		})
		if !errors.Is(cause, lock.ErrLost) {
			t.Fatalf("Run's context cause = %v (Run: %v); want ErrLost", cause, err)
		}
		why := lossReason(cause)
		if strings.Contains(why, "lost") || strings.Contains(why, "extensions failed") || !strings.Contains(why, "cannot extend") {
			t.Errorf("lossReason(%q) = %q; want the reason alone: the store cannot extend locks", cause, why)
		}
	})
}
