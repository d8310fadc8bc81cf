package sloghook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
	"github.com/lockkit/lock/stores/memory"
)

// errClientTimeout is a store failure that wraps context.DeadlineExceeded
// while the caller's context is alive: a client's own timeout.
var errClientTimeout = fmt.Errorf("read tcp: i/o timeout: %w", context.DeadlineExceeded)

// lockedBuffer is a bytes.Buffer safe for concurrent use: a locker's
// background cleanup (the release after a failed acquisition) may log
// while the test reads what was logged.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// acquireRecords returns the records of a JSON log that report a store's
// acquire call.
func acquireRecords(out string) []string {
	var recs []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"msg":"lock store call"`) && strings.Contains(line, `"store_op":"acquire"`) {
			recs = append(recs, line)
		}
	}
	return recs
}

// A store call that failed with an error wrapping
// context.DeadlineExceeded while the caller's context is alive is a store
// failure, logged at Warn; one that failed because the caller's context
// ended is logged at Debug.
func TestStoreCallDeadlineLevelFollowsTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tryLock := func(ctx context.Context, f memory.Fault) (string, error) {
			var buf lockedBuffer
			h := sloghook.New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
			m := memory.New(memory.WithName("mem"))
			m.Inject(f)
			l, err := lock.NewSingle(m, &lock.Options{Hook: h})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.TryLock(ctx, "r", time.Minute)
			synctest.Wait()
			return buf.String(), err
		}

		// The caller's context alive: the client timed out.
		out, err := tryLock(context.Background(), memory.Fault{Ops: memory.OpAcquire, Err: errClientTimeout})
		if !errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("TryLock(r) on a store that timed out = %v; want ErrUnavailable", err)
		}
		if recs := acquireRecords(out); len(recs) != 1 || !strings.Contains(recs[0], `"level":"WARN"`) {
			t.Errorf("store call failed with %v, caller's context alive, logged %q; want one record at WARN", errClientTimeout, recs)
		}

		// The caller's context ended during the store call.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		out, err = tryLock(ctx, memory.Fault{Ops: memory.OpAcquire, Delay: time.Hour})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TryLock(r) until the caller's deadline = %v; want DeadlineExceeded", err)
		}
		if recs := acquireRecords(out); len(recs) != 1 || !strings.Contains(recs[0], `"level":"DEBUG"`) {
			t.Errorf("store call ended by the caller's deadline logged %q; want one record at DEBUG", recs)
		}
	})
}

// LevelContext gives a store call's failure the level Observe logs it at
// in that context; Level, which has no context, takes a context error for
// the call's end, as before LevelContext.
func TestLevelContextOfStoreCallFailure(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want slog.Level
	}{
		{context.Background(), errClientTimeout, slog.LevelWarn},
		{context.Background(), fmt.Errorf("pool: %w", context.Canceled), slog.LevelWarn},
		{context.Background(), errors.New("connection reset"), slog.LevelWarn},
		{ended, context.Canceled, slog.LevelDebug},
		{ended, errClientTimeout, slog.LevelDebug},
		{ended, errors.New("connection reset"), slog.LevelWarn},
		{ended, lock.ErrNotAcquired, slog.LevelDebug},
	} {
		e := lock.Event{Kind: lock.EventStoreCall, Op: "lock", Resource: "r", Store: "mem", StoreOp: "acquire", Err: c.err}
		if got := sloghook.LevelContext(c.ctx, e); got != c.want {
			t.Errorf("LevelContext(ctx with Err() %v, store call failed with %v) = %v; want %v", c.ctx.Err(), c.err, got, c.want)
		}
		if got, want := sloghook.Level(e), sloghook.LevelContext(ended, e); got != want {
			t.Errorf("Level(store call failed with %v) = %v; want %v, the level in an ended context", c.err, got, want)
		}
		var buf bytes.Buffer
		sloghook.New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).Observe(c.ctx, e)
		if want := "level=" + c.want.String() + " "; !strings.Contains(buf.String(), want) {
			t.Errorf("Observe(ctx with Err() %v, store call failed with %v) logged %q; want %s", c.ctx.Err(), c.err, buf.String(), want)
		}
	}
}
