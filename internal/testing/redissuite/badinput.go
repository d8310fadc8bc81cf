package redissuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// testBadInputRefusedBeforeSending: every method refuses an empty or too
// long resource name, an empty token and a TTL that is not positive with
// an error matching lock.ErrInvalid, before anything is sent — so also on
// a server that is gone, where anything sent would fail otherwise.
func (f Factory) testBadInputRefusedBeforeSending(t *testing.T) {
	srv := redistest.Start(t)
	s := f.Server(t, srv)
	srv.Close()
	ctx := ctxFor(t, 10*time.Second)
	long := strings.Repeat("}", redisstore.MaxResourceLen+1)
	for _, name := range []string{"", long} {
		calls := map[string]error{
			"Acquire":       s.Acquire(ctx, name, "t", time.Second),
			"AcquireFenced": second(s.AcquireFenced(ctx, name, "t", time.Second)),
			"Release":       s.Release(ctx, name, "t"),
			"Extend":        s.Extend(ctx, name, "t", time.Second),
			"Exists":        second(s.Exists(ctx, name)),
			"TTL":           third(s.TTL(ctx, name)),
			"Holder":        third(s.Holder(ctx, name)),
			"RaiseFence":    s.RaiseFence(ctx, name, 1),
			"LastFence":     third(s.LastFence(ctx, name)),
			"ForceRelease":  second(s.ForceRelease(ctx, name)),
			"WaitRelease":   s.WaitRelease(ctx, name),
			"AcquirePermit": second(s.AcquirePermit(ctx, name, "t", 2, time.Second)),
			"ReleasePermit": s.ReleasePermit(ctx, name, "t"),
			"ExtendPermit":  s.ExtendPermit(ctx, name, "t", time.Second),
			"WaitPermit":    s.WaitPermit(ctx, name),
			"Start":         started(ctx, s, lock.Call{Op: lock.CallAcquireFenced, Resource: name, Token: "t", TTL: time.Second}),
		}
		for call, err := range calls {
			if !errors.Is(err, lock.ErrInvalid) {
				t.Errorf("%s(%d-byte resource) on a dead server = %v; want lock.ErrInvalid", call, len(name), err)
			}
		}
	}
	for call, err := range map[string]error{
		"Acquire(empty token)":       s.Acquire(ctx, "r", "", time.Second),
		"Acquire(ttl 0)":             s.Acquire(ctx, "r", "t", 0),
		"AcquireFenced(ttl -1s)":     second(s.AcquireFenced(ctx, "r", "t", -time.Second)),
		"Release(empty token)":       s.Release(ctx, "r", ""),
		"Extend(empty token)":        s.Extend(ctx, "r", "", time.Second),
		"Extend(ttl 0)":              s.Extend(ctx, "r", "t", 0),
		"AcquirePermit(empty token)": second(s.AcquirePermit(ctx, "r", "", 2, time.Second)),
		"AcquirePermit(ttl 0)":       second(s.AcquirePermit(ctx, "r", "t", 2, 0)),
		"AcquirePermit(limit 0)":     second(s.AcquirePermit(ctx, "r", "t", 0, time.Second)),
		"ReleasePermit(empty token)": s.ReleasePermit(ctx, "r", ""),
		"ExtendPermit(ttl 0)":        s.ExtendPermit(ctx, "r", "t", 0),
		"RaiseFence(above MaxFence)": s.RaiseFence(ctx, "r", redisstore.MaxFence+1),
		"Start(empty token)":         started(ctx, s, lock.Call{Op: lock.CallAcquire, Resource: "r", TTL: time.Second}),
		"Start(ttl 0)":               started(ctx, s, lock.Call{Op: lock.CallExtend, Resource: "r", Token: "t"}),
		"Acquire(nil context)":       s.Acquire(nilContext(), "r", "t", time.Second),
		"WaitRelease(nil context)":   s.WaitRelease(nilContext(), "r"),
		"ForceRelease(nil context)":  second(s.ForceRelease(nilContext(), "r")),
		"AcquirePermit(nil context)": second(s.AcquirePermit(nilContext(), "r", "t", 2, time.Second)),
		"Start(unknown call)":        started(ctx, s, lock.Call{Op: 0, Resource: "r", Token: "t", TTL: time.Second}),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s on a dead server = %v; want lock.ErrInvalid", call, err)
		}
	}
}

// testOptionsNamed: New refuses an option with a bad value with an error
// matching lock.ErrInvalid that names the option.
func (f Factory) testOptionsNamed(t *testing.T) {
	client := f.Client(t, redistest.Start(t))
	for _, tc := range []struct {
		opts  []redisstore.Option
		names string
	}{
		{[]redisstore.Option{redisstore.WithPrefix("a{b")}, "WithPrefix"},
		{[]redisstore.Option{redisstore.WithPrefix("x}")}, "WithPrefix"},
		{[]redisstore.Option{redisstore.WithPrefix(redisstore.FenceKey + ":")}, "WithPrefix"},
		{[]redisstore.Option{redisstore.WithName("")}, "WithName"},
		{[]redisstore.Option{redisstore.WithWaitReplicas(0, time.Second)}, "WithWaitReplicas"},
		{[]redisstore.Option{redisstore.WithWaitReplicas(1, 0)}, "WithWaitReplicas"},
		{[]redisstore.Option{redisstore.WithRestartGuard(0)}, "WithRestartGuard"},
		{[]redisstore.Option{redisstore.WithRestartGuard(-time.Second)}, "WithRestartGuard"},
		{[]redisstore.Option{redisstore.WithFenceRetention(0)}, "WithFenceRetention"},
		{[]redisstore.Option{redisstore.WithRestartGuard(time.Second), redisstore.WithWaitReplicas(1, time.Second)}, "WithRestartGuard and WithWaitReplicas"},
	} {
		s, err := f.New(client, tc.opts...)
		if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(fmt.Sprint(err), tc.names) {
			t.Errorf("New with bad %s = %v, %v; want an error matching lock.ErrInvalid naming %s", tc.names, s, err, tc.names)
		}
	}
	if _, err := f.New(client, redisstore.WithPrefix("lockkit:fence"), redisstore.WithPrefix("")); err != nil {
		t.Errorf("New with the prefixes lockkit:fence and \"\" = %v; want nil: only FenceKey + \":\" and braces are refused", err)
	}
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }

// nilContext returns a nil context, as a caller's bug would pass one.
func nilContext() context.Context { return nil }

// started runs c with s.Start and returns its error.
func started(ctx context.Context, s Store, c lock.Call) error {
	done := make(chan error, 1)
	s.Start(ctx, c, func(_ uint64, err error) { done <- err })
	return <-done
}
