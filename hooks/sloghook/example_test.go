package sloghook_test

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
	"github.com/lockkit/lock/stores/memory"
)

// Log what a locker does. At the Info level only what deserves attention
// is logged: here, a TryLock that found the lock held by another owner.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{} // varying values, left out of this example
			}
			return a
		},
	}))
	locker, err := lock.NewSingle(memory.New(memory.WithName("mem")), &lock.Options{Hook: sloghook.New(logger)})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	if _, err := locker.TryLock(ctx, "orders/42", time.Minute); err != nil {
		panic(err)
	}
	_, _ = locker.TryLock(ctx, "orders/42", time.Minute) // held: logged at Info
	// Output:
	// level=INFO msg="lock not acquired" op=trylock resource=orders/42 attempts=1 error="trylock \"orders/42\": not acquired: held by another owner"
}
