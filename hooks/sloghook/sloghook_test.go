package sloghook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/sloghook"
	"github.com/lockkit/lock/stores/memory"
)

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad JSON record %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogsAtTheRightLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := memory.New(memory.WithName("mem"))
	l, err := lock.NewSingle(store, &lock.Options{Hook: sloghook.New(logger)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held, err := l.TryLock(ctx, "orders/1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	store.Inject(memory.Fault{Ops: memory.OpRelease, Err: errors.New("connection reset")})
	_ = l.Unlock(ctx, held)

	recs := records(t, &buf)
	var got []string
	for _, r := range recs {
		got = append(got, r["level"].(string)+" "+r["msg"].(string))
		if r["resource"] != "orders/1" {
			t.Errorf("record %v lacks the resource", r)
		}
		if strings.Contains(buf.String(), held.Token) {
			t.Fatal("a token was logged")
		}
	}
	want := []string{
		"DEBUG lock attempt",
		"DEBUG lock store call",
		"DEBUG lock acquired",
		"WARN lock store call",
		"WARN lock released",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records %q; want %q", got, want)
	}
	if recs[1]["store"] != "mem" || recs[1]["store_op"] != "acquire" {
		t.Errorf("store call record %v; want store mem, store_op acquire", recs[1])
	}
	if recs[3]["error"] != "connection reset" {
		t.Errorf("failed store call record %v; want the store's error", recs[3])
	}
}

func TestLossIsAnError(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil)) // Info and above
	store := memory.New()
	l, _ := lock.NewSingle(store, &lock.Options{Hook: sloghook.New(logger)})
	err := lock.Run(context.Background(), l, "job", 300*time.Millisecond, func(ctx context.Context, _ lock.Lock) error {
		store.Expire("job")
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("Run() = %v; want ErrLost", err)
	}
	var levels []string
	for _, r := range records(t, &buf) {
		levels = append(levels, r["level"].(string)+" "+r["msg"].(string))
	}
	want := "WARN lock extended|ERROR lock lost|WARN lock released"
	if strings.Join(levels, "|") != want {
		t.Errorf("records at Info and above: %q; want %q", levels, want)
	}
}

func ExampleNew() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	locker, err := lock.NewSingle(memory.New(), &lock.Options{Hook: sloghook.New(logger)})
	if err != nil {
		panic(err)
	}
	_ = locker // contention, store failures and lost locks are now logged
}
