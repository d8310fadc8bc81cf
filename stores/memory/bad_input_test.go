package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// Every method refuses bad input with an error matching lock.ErrInvalid
// that names what is wrong, before anything happens: the call changes
// nothing and spends no injected fault.
func TestBadInputRefusedFirst(t *testing.T) {
	ctx := context.Background()
	var noCtx context.Context
	for _, c := range []struct {
		call string
		do   func(s *memory.Store) error
		says string // what the error must name
	}{
		{"Acquire(\"\", a, 1m)", func(s *memory.Store) error { return s.Acquire(ctx, "", "a", time.Minute) }, "empty resource"},
		{"Acquire(r, \"\", 1m)", func(s *memory.Store) error { return s.Acquire(ctx, "r", "", time.Minute) }, "empty token"},
		{"Acquire(r, a, 0)", func(s *memory.Store) error { return s.Acquire(ctx, "r", "a", 0) }, "ttl is 0s"},
		{"Acquire(r, a, -1s)", func(s *memory.Store) error { return s.Acquire(ctx, "r", "a", -time.Second) }, "ttl is -1s"},
		{"Acquire with a nil context", func(s *memory.Store) error { return s.Acquire(noCtx, "r", "a", time.Minute) }, "nil context"},
		{"AcquireFenced(r, a, 0)", func(s *memory.Store) error { _, err := s.AcquireFenced(ctx, "r", "a", 0); return err }, "ttl is 0s"},
		{"Release(r, \"\")", func(s *memory.Store) error { return s.Release(ctx, "r", "") }, "empty token"},
		{"Extend(r, a, 0)", func(s *memory.Store) error { return s.Extend(ctx, "r", "a", 0) }, "ttl is 0s"},
		{"Exists(\"\")", func(s *memory.Store) error { _, err := s.Exists(ctx, ""); return err }, "empty resource"},
		{"TTL(\"\")", func(s *memory.Store) error { _, _, err := s.TTL(ctx, ""); return err }, "empty resource"},
		{"Holder(\"\")", func(s *memory.Store) error { _, _, err := s.Holder(ctx, ""); return err }, "empty resource"},
		{"WaitRelease(\"\")", func(s *memory.Store) error { return s.WaitRelease(ctx, "") }, "empty resource"},
		{"RaiseFence(\"\", 1)", func(s *memory.Store) error { return s.RaiseFence(ctx, "", 1) }, "empty resource"},
		{"AcquirePermit(r, a, limit 0)", func(s *memory.Store) error { _, err := s.AcquirePermit(ctx, "r", "a", 0, time.Minute); return err }, "limit is 0"},
		{"AcquirePermit(r, a, limit 2, 0)", func(s *memory.Store) error { _, err := s.AcquirePermit(ctx, "r", "a", 2, 0); return err }, "ttl is 0s"},
		{"ReleasePermit(r, \"\")", func(s *memory.Store) error { return s.ReleasePermit(ctx, "r", "") }, "empty token"},
		{"ExtendPermit(r, a, 0)", func(s *memory.Store) error { return s.ExtendPermit(ctx, "r", "a", 0) }, "ttl is 0s"},
		{"Permits(\"\")", func(s *memory.Store) error { _, err := s.Permits(ctx, ""); return err }, "empty resource"},
		{"WaitPermit(\"\")", func(s *memory.Store) error { return s.WaitPermit(ctx, "") }, "empty resource"},
	} {
		s := memory.New()
		s.Inject(memory.Fault{Err: errReset})
		err := c.do(s)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s = %v; want an error matching lock.ErrInvalid that says %q", c.call, err, c.says)
			continue
		}
		if got := s.Resources(); len(got) != 0 {
			t.Errorf("Resources() after %s was refused = %q; want none", c.call, got)
		}
		if n, err := s.Permits(ctx, "r"); !errors.Is(err, errReset) {
			t.Errorf("Permits(r) after %s was refused = %d, %v; want the injected fault, which the refused call must not have spent", c.call, n, err)
		}
	}
}
