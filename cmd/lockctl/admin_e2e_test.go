package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// status and release --force agree with the library: a lock taken by a
// program shows as held, with its TTL and fence where the store tells
// them; released by force, the program finds it no longer held.
func TestStatusAndReleaseAgreeWithLibrary(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		locker := b.locker(t)
		status := func() statusReport {
			t.Helper()
			code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, b.flags()...), "orders/42")...)
			var st statusReport
			if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil {
				t.Fatalf("status --json: exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
			}
			if len(st.Stores) != len(b.urls) {
				t.Fatalf("status --json lists %d stores; want %d: %s", len(st.Stores), len(b.urls), stdout)
			}
			return st
		}
		if st := status(); st.Held == nil || *st.Held {
			t.Fatalf("status of a free resource: %+v", st)
		}

		l, err := locker.TryLock(ctx, "orders/42", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st := status()
		if st.Held == nil || !*st.Held {
			t.Fatalf("status while the library holds the lock: %+v; want held", st)
		}
		// A single store's last fence is the holder's. Redlock's fence is
		// established on a quorum: those stores' next fences exceed it
		// (a raise may lift a counter past it), the others catch up in
		// the background.
		atOrAbove := func(f uint64) bool { return f == l.Fence || len(b.urls) > 1 && f > l.Fence }
		above := 0
		for _, s := range st.Stores {
			if s.LastFence != nil && atOrAbove(*s.LastFence) {
				above++
			}
		}
		if quorum := len(b.urls)/2 + 1; b.fences && above < quorum {
			t.Errorf("%d stores report a last fence at or above the holder's fence %d; want %d: %+v", above, l.Fence, quorum, st.Stores)
		}
		for i, s := range st.Stores {
			switch {
			case s.Held == nil || !*s.Held:
				t.Errorf("store %d: held = %v; want true", i, s.Held)
			case b.ttls && (s.TTLMillis == nil || *s.TTLMillis <= 0 || *s.TTLMillis > time.Minute.Milliseconds()):
				t.Errorf("store %d: ttl_ms = %v; want in (0, 60000]", i, s.TTLMillis)
			case !b.ttls && s.TTLMillis != nil:
				t.Errorf("store %d: ttl_ms = %d; want null: the store cannot tell", i, *s.TTLMillis)
			case b.fences && len(b.urls) == 1 && (s.LastFence == nil || *s.LastFence != l.Fence):
				t.Errorf("store %d: last_fence = %v; want the holder's fence %d", i, s.LastFence, l.Fence)
			case !b.fences && s.LastFence != nil:
				t.Errorf("store %d: last_fence = %d; want null: the store does not fence", i, *s.LastFence)
			}
		}
		code, stdout, _ := lockctl(t, nil, append(append([]string{"status"}, b.flags()...), "orders/42")...)
		if code != 0 || !strings.HasPrefix(stdout, "orders/42: held\n") {
			t.Errorf("status: exit %d, %q; want held", code, stdout)
		}
		// One row per store, in aligned columns under the header.
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != 2+len(b.urls) || strings.Fields(lines[1])[0] != "STORE" {
			t.Fatalf("status: %q; want the resource, a header and a row per store", stdout)
		}
		for i, u := range b.urls {
			row := lines[2+i]
			want := "unknown"
			if b.ttls {
				want = "-" // a duration, checked below
			}
			f := strings.Fields(row)
			switch {
			case f[0] != u || f[1] != "held":
				t.Errorf("status row %q; want %s held", row, u)
			case strings.Index(row, " held")+1 != strings.Index(lines[1], "STATE") || strings.Index(row, f[2]) != strings.Index(lines[1], "TTL"):
				t.Errorf("status row %q is not aligned with its header %q", row, lines[1])
			case want == "unknown" && f[2] != want, want != "unknown" && !strings.HasSuffix(f[2], "s"):
				t.Errorf("status row %q: TTL %q", row, f[2])
			case b.fences && len(b.urls) == 1 && f[3] != strconv.FormatUint(l.Fence, 10), !b.fences && f[3] != "-":
				t.Errorf("status row %q: last fence %q; the holder's is %d", row, f[3], l.Fence)
			case b.fences && len(b.urls) > 1 && f[3] != "-" && !isUint(f[3]):
				t.Errorf("status row %q: last fence %q; want a number or -", row, f[3])
			}
		}

		code, stdout, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "orders/42")...)
		if code != 0 || !strings.HasPrefix(stdout, "orders/42: released\n") || strings.Count(stdout, "  released") != len(b.urls) {
			t.Fatalf("release --force: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if _, err := locker.Extend(ctx, l, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("the owner's Extend after release --force = %v; want ErrNotHeld", err)
		}
		if held, err := locker.IsLocked(ctx, "orders/42"); err != nil || held {
			t.Errorf("IsLocked after release --force = %v, %v; want false", held, err)
		}
		if st := status(); st.Held == nil || *st.Held {
			t.Errorf("status after release --force: %+v; want free", st)
		}
		code, stdout, _ = lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "orders/42")...)
		if code != 0 || !strings.HasPrefix(stdout, "orders/42: was not held") {
			t.Errorf("release --force of a free resource: exit %d, %q", code, stdout)
		}
	})
}

func isUint(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
