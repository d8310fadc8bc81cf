package redissuite

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testNoScriptNeverReachesCaller: every call that runs a script answers
// as usual right after SCRIPT FLUSH (which a restart or a failover does
// too): the store sends the script in full when the server answers
// NOSCRIPT, which never reaches the caller (the package documentation).
func (f Factory) testNoScriptNeverReachesCaller(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	ctx := ctxFor(t, 30*time.Second)
	flushed := func(call string, err error) error {
		t.Helper()
		if err != nil && strings.Contains(err.Error(), "NOSCRIPT") {
			t.Errorf("%s after SCRIPT FLUSH = %v; want the script sent in full, not NOSCRIPT", call, err)
		}
		return err
	}
	flush := func() {
		t.Helper()
		if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AcquireFenced(ctx, "r", "t~h", time.Minute); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		call string
		run  func() error
	}{
		{"TTL(r)", func() error { _, held, err := s.TTL(ctx, "r"); return wantHeld(held, err) }},
		{"RaiseFence(r)", func() error { return s.RaiseFence(ctx, "r", 1) }},
		{"LastFence(r)", func() error { _, ok, err := s.LastFence(ctx, "r"); return wantHeld(ok, err) }},
		{"Extend(r)", func() error { return s.Extend(ctx, "r", "t~h", time.Minute) }},
		{"ForceRelease(r)", func() error { held, err := s.ForceRelease(ctx, "r"); return wantHeld(held, err) }},
		{"WaitRelease(r) of a free lock", func() error { return s.WaitRelease(ctx, "r") }},
		{"AcquirePermit(p)", func() error { _, err := s.AcquirePermit(ctx, "p", "t", 1, time.Minute); return err }},
		{"Permits(p)", func() error {
			n, err := s.Permits(ctx, "p")
			return wantHeld(n == 1, err)
		}},
		{"AcquirePermit(p) when full", func() error {
			if _, err := s.AcquirePermit(ctx, "p", "u", 1, time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
				return err
			}
			return nil
		}},
		{"ExtendPermit(p)", func() error { return s.ExtendPermit(ctx, "p", "t", time.Minute) }},
		{"ReleasePermit(p)", func() error { return s.ReleasePermit(ctx, "p", "t") }},
		{"WaitPermit(p) with a permit free", func() error { return s.WaitPermit(ctx, "p") }},
		{"Start(RaiseFence r)", func() error { return started(ctx, s, lock.Call{Op: lock.CallRaiseFence, Resource: "r", Fence: 1}) }},
		{"Start(AcquireFenced r)", func() error {
			return started(ctx, s, lock.Call{Op: lock.CallAcquireFenced, Resource: "r", Token: "t", TTL: time.Minute})
		}},
		{"Start(Extend r)", func() error {
			return started(ctx, s, lock.Call{Op: lock.CallExtend, Resource: "r", Token: "t", TTL: time.Minute})
		}},
		{"Start(Release r)", func() error { return started(ctx, s, lock.Call{Op: lock.CallRelease, Resource: "r", Token: "t"}) }},
	}
	for _, step := range steps {
		flush()
		if err := flushed(step.call, step.run()); err != nil {
			t.Errorf("%s after SCRIPT FLUSH = %v; want nil", step.call, err)
		}
	}

	guarded := f.Server(t, srv, redisstore.WithRestartGuard(time.Minute))
	if err := srv.Do("DEL", redisstore.GuardKey).Error(); err != nil {
		t.Fatal(err)
	}
	flush()
	if err := flushed("guarded Acquire", guarded.Acquire(ctx, "g", "t", time.Minute)); !errors.Is(err, redisstore.ErrRecovering) {
		t.Errorf("guarded Acquire on a server without the guard's marker, after SCRIPT FLUSH = %v; want ErrRecovering", err)
	}
}

// wantHeld turns a (held, err) answer into an error: err, or one saying
// that the answer was not held.
func wantHeld(held bool, err error) error {
	if err == nil && !held {
		return errors.New("answered not held")
	}
	return err
}
