package memcache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock"
)

// TestEveryCallRefusesBadInput: every method, the fenced and
// administrative ones included, refuses an empty resource, an empty
// token, a TTL that is not positive and a nil context with
// lock.ErrInvalid, before anything is sent (the client's server is
// unreachable).
func TestEveryCallRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := newStore(t, gomemcache.New("127.0.0.1:1"))
	bg := context.Background()
	var none context.Context
	second := func(_ any, err error) error { return err }
	third := func(_, _ any, err error) error { return err }
	for call, err := range map[string]error{
		"AcquireFenced(empty resource)": second(s.AcquireFenced(bg, "", "t", time.Second)),
		"AcquireFenced(empty token)":    second(s.AcquireFenced(bg, "r", "", time.Second)),
		"AcquireFenced(ttl 0)":          second(s.AcquireFenced(bg, "r", "t", 0)),
		"AcquireFenced(ttl past 2038)":  second(s.AcquireFenced(bg, "r", "t", 200*365*24*time.Hour)),
		"Extend(ttl past 2038)":         s.Extend(bg, "r", "t", 200*365*24*time.Hour),
		"Extend(empty resource)":        s.Extend(bg, "", "t", time.Second),
		"Holder(empty resource)":        third(s.Holder(bg, "")),
		"ForceRelease(empty resource)":  second(s.ForceRelease(bg, "")),
		"RaiseFence(empty resource)":    s.RaiseFence(bg, "", 1),
		"Acquire(nil context)":          s.Acquire(none, "r", "t", time.Second),
		"Release(nil context)":          s.Release(none, "r", "t"),
		"Extend(nil context)":           s.Extend(none, "r", "t", time.Second),
		"Exists(nil context)":           second(s.Exists(none, "r")),
		"Holder(nil context)":           third(s.Holder(none, "r")),
		"ForceRelease(nil context)":     second(s.ForceRelease(none, "r")),
		"RaiseFence(nil context)":       s.RaiseFence(none, "r", 1),
		"AcquireFenced(nil context)":    second(s.AcquireFenced(none, "r", "t", time.Second)),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s = %v; want lock.ErrInvalid", call, err)
		}
	}
}
