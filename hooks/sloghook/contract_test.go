package sloghook_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
	"github.com/lockkit/lock/stores/memory"
)

// TestContractTokensNeverLogged: "Tokens are never logged: they are the
// holders' secrets", through every kind of event, on both lockers.
func TestContractTokensNeverLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var buf lockedBuffer // the lockers' background cleanup may log while the test reads
		h := sloghook.New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
		m1, m2, m3 := memory.New(memory.WithName("a")), memory.New(memory.WithName("b")), memory.New(memory.WithName("c"))
		single, err := lock.NewSingle(m1, &lock.Options{Hook: h, Holder: "host"})
		if err != nil {
			t.Fatal(err)
		}
		multi, err := lock.NewMulti([]lock.Store{m1, m2, m3}, &lock.Options{Hook: h})
		if err != nil {
			t.Fatal(err)
		}
		var tokens []string
		for _, l := range []lock.Locker{single, multi} {
			k, err := l.TryLock(ctx, "r", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, k.Token)
			_, _ = l.TryLock(ctx, "r", time.Minute)
			k, _ = l.Extend(ctx, k, time.Minute)
			_ = l.Unlock(ctx, k)
			_ = l.Unlock(ctx, k)
			_, _ = l.Extend(ctx, k, time.Minute)
			m2.Inject(memory.Fault{Err: errors.New("reset"), Times: 3})
			m1.Inject(memory.Fault{Ops: memory.OpRelease, Err: errors.New("reset"), AfterApply: true})
			_ = lock.Run(ctx, l, "run", 3*time.Second, func(ctx context.Context, k lock.Lock) error {
				tokens = append(tokens, k.Token)
				m1.Expire("run")
				m2.Expire("run")
				m3.Expire("run")
				<-ctx.Done()
				return nil
			})
		}
		time.Sleep(time.Minute)
		out := buf.String()
		if !strings.Contains(out, `"resource":"r"`) {
			t.Fatalf("nothing logged: %s", out)
		}
		for _, tok := range tokens {
			secret, _, _ := strings.Cut(tok, "~")
			if strings.Contains(out, secret) {
				t.Errorf("the log holds the token secret %q", secret)
			}
		}
		if !strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("no Error record for a lost lock")
		}
	})
}
