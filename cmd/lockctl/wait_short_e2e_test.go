package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// A --wait shorter than one store round trip bounds the waiting, not the
// first attempt's answer: a lock held by another owner gives 75, as with
// --wait 0, not "context deadline exceeded". The store's replies come
// 50ms late, through a proxy, so the first answer always comes after the
// 1ms --wait has run out; with one store and with a Redlock.
func TestWaitShorterThanRoundTrip(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 3)
	var direct, slow []string
	for _, s := range srvs {
		p, err := faultproxy.New(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.Set(faultproxy.ToClient, faultproxy.Delay(50*time.Millisecond, 0))
		direct = append(direct, "--store", "redis://"+s.Addr())
		slow = append(slow, "--store", "redis://"+p.Addr())
	}
	for _, tc := range []struct {
		name           string
		direct, stores []string
	}{
		{"single", direct[:2], slow[:2]},
		{"redlock", direct, slow},
	} {
		resource := "r-" + tc.name
		hold := append([]string{"acquire", "--ttl", "1m", "--lock", filepath.Join(t.TempDir(), "held.lock")}, tc.direct...)
		if code, _, stderr := lockctl(t, nil, append(hold, resource)...); code != exitOK {
			t.Fatalf("%s: acquire: exit %d, %s", tc.name, code, stderr)
		}
		for _, cmd := range [][]string{
			{"run", "--wait", "1ms", resource, "--", "true"},
			{"acquire", "--wait", "1ms", "--lock", filepath.Join(t.TempDir(), "mine.lock"), resource},
		} {
			args := append(append([]string{cmd[0]}, tc.stores...), cmd[1:]...)
			code, _, stderr := lockctl(t, nil, args...)
			if code != exitConflict || !strings.Contains(stderr, "held by another owner") {
				t.Errorf("%s: %s --wait 1ms on a held lock: exit %d, stderr %q; want %d, held by another owner", tc.name, cmd[0], code, stderr, exitConflict)
			}
		}
	}
}
