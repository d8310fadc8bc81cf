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
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
)

// Every kind of event is logged at Level's level, as "lock " and the
// kind's name, with the operation, the resource and the attributes that
// apply to it (the duration wherever the event has one), and never the
// token.
func TestEveryKindRendered(t *testing.T) {
	const secret = "s3cr3t-t0k3n"
	until := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	held := lock.Lock{Resource: "orders/1", Token: secret + "~host", Fence: 42, ValidUntil: until}
	reset := errors.New("connection reset")
	for _, c := range []struct {
		e     lock.Event
		level string
		attrs []string // key=value, in slog's text form
	}{
		{lock.Event{Kind: lock.EventAttempt, Op: "lock", Attempt: 2}, "DEBUG", []string{"attempt=2"}},
		{lock.Event{Kind: lock.EventStoreCall, Op: "lock", Store: "mem", StoreIndex: 3, StoreOp: "acquire", Duration: time.Millisecond, Err: reset}, "WARN", []string{"store=mem", "store_index=3", "store_op=acquire", "duration=1ms", `error="connection reset"`}},
		{lock.Event{Kind: lock.EventQuorum, Op: "lock", Granted: 2, Refused: 1, Failed: 0, Duration: 2 * time.Millisecond}, "DEBUG", []string{"granted=2", "refused=1", "failed=0", "duration=2ms"}},
		{lock.Event{Kind: lock.EventRetry, Op: "lock", Attempt: 1, Delay: 50 * time.Millisecond, Waiting: true, Err: lock.ErrNotAcquired}, "DEBUG", []string{"attempt=1", "delay=50ms", "waiting=true"}},
		{lock.Event{Kind: lock.EventAcquired, Op: "lock", Lock: held, Attempt: 3, Duration: 3 * time.Millisecond}, "DEBUG", []string{"attempts=3", "duration=3ms", "fence=42", "valid_until=2026-11-25T12:00:00.000Z"}},
		{lock.Event{Kind: lock.EventNotAcquired, Op: "trylock", Attempt: 1, Duration: time.Millisecond, Err: lock.ErrNotAcquired}, "INFO", []string{"attempts=1", "duration=1ms"}},
		{lock.Event{Kind: lock.EventNotAcquired, Op: "lock", Attempt: 4, Err: lock.ErrUnavailable}, "WARN", []string{"attempts=4"}},
		{lock.Event{Kind: lock.EventExtended, Op: "extend", Lock: held, Duration: 4 * time.Millisecond}, "DEBUG", []string{"duration=4ms", "fence=42", "valid_until=2026-11-25T12:00:00.000Z"}},
		{lock.Event{Kind: lock.EventExtended, Op: "extend", Lock: held, Duration: 4 * time.Millisecond, Err: lock.ErrNotHeld}, "WARN", []string{"duration=4ms"}},
		{lock.Event{Kind: lock.EventReleased, Op: "unlock", Lock: held, Duration: 5 * time.Millisecond}, "DEBUG", []string{"duration=5ms", "fence=42"}},
		{lock.Event{Kind: lock.EventReleased, Op: "unlock", Lock: held, Err: reset}, "WARN", []string{`error="connection reset"`}},
		{lock.Event{Kind: lock.EventLost, Op: "run", Lock: held, Err: lock.ErrLost}, "ERROR", []string{"op=run", "fence=42"}},
	} {
		var buf bytes.Buffer
		h := sloghook.New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
		c.e.Resource = "orders/1"
		h.Observe(context.Background(), c.e)
		out := buf.String()
		name := fmt.Sprintf("Observe(%v, err %v)", c.e.Kind, c.e.Err)
		if want := fmt.Sprintf("level=%s msg=%q op=%s resource=orders/1", c.level, "lock "+c.e.Kind.String(), c.e.Op); !strings.Contains(out, want) {
			t.Errorf("%s logged %q; want it to contain %q", name, out, want)
		}
		if got := sloghook.Level(c.e).String(); got != c.level {
			t.Errorf("Level(%v, err %v) = %s; want %s", c.e.Kind, c.e.Err, got, c.level)
		}
		for _, a := range c.attrs {
			if !strings.Contains(out, " "+a) {
				t.Errorf("%s logged %q; want it to contain %s", name, out, a)
			}
		}
		if strings.Contains(out, secret) {
			t.Errorf("%s logged %q: the token's secret", name, out)
		}
	}
}

// New(nil) and the zero Hook log to slog.Default() as it is when they
// log: made before slog.SetDefault, they follow it.
func TestDefaultLogger(t *testing.T) {
	hooks := map[string]lock.Hook{"New(nil)": sloghook.New(nil), "&Hook{}": &sloghook.Hook{}}
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	e := lock.Event{Kind: lock.EventLost, Op: "run", Resource: "job", Err: lock.ErrLost}
	for name, h := range hooks {
		buf.Reset()
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s.Observe panicked: %v; want a record on slog.Default()", name, p)
				}
			}()
			h.Observe(context.Background(), e)
		}()
		if !strings.Contains(buf.String(), `msg="lock lost"`) {
			t.Errorf("%s logged %q on slog.Default(); want the lost lock", name, buf.String())
		}
	}
}

// Records below the logger's level are not built; the hook is safe for
// concurrent use (run with -race).
func TestConcurrentAndLevelled(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	h := sloghook.New(slog.New(slog.NewJSONHandler(&lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				h.Observe(context.Background(), lock.Event{Kind: lock.EventAttempt, Op: "lock", Resource: "r", Attempt: 1})
				h.Observe(context.Background(), lock.Event{Kind: lock.EventLost, Op: "run", Resource: "r", Err: lock.ErrLost})
			}
		}()
	}
	wg.Wait()
	if n, attempts := strings.Count(buf.String(), `"msg":"lock lost"`), strings.Count(buf.String(), `"msg":"lock attempt"`); n != 800 || attempts != 0 {
		t.Errorf("%d lost records and %d attempt records at Warn; want 800 and 0", n, attempts)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A Lock that failed for another reason than unavailable stores is logged
// at Info, as the package doc lists.
func TestNotAcquiredAtInfo(t *testing.T) {
	for _, err := range []error{lock.ErrNotAcquired, context.Canceled, context.DeadlineExceeded, lock.ErrInvalid, lock.ErrClosed} {
		e := lock.Event{Kind: lock.EventNotAcquired, Op: "lock", Resource: "r", Err: &lock.Error{Op: "lock", Resource: "r", Err: err}}
		if got := sloghook.Level(e); got != slog.LevelInfo {
			t.Errorf("Level(not acquired: %v) = %v; want INFO", err, got)
		}
	}
	e := lock.Event{Kind: lock.EventNotAcquired, Op: "lock", Resource: "r", Err: &lock.Error{Op: "lock", Resource: "r", Err: lock.ErrUnavailable}}
	if got := sloghook.Level(e); got != slog.LevelWarn {
		t.Errorf("Level(not acquired: unavailable) = %v; want WARN", got)
	}
}
