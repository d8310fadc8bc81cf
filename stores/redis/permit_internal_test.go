package redis

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// counting is the store's client, counting the round trips it makes.
type counting struct {
	client
	trips atomic.Int64
}

func (c *counting) Do(ctx context.Context, cmd redisstore.Cmd) redisstore.Reply {
	c.trips.Add(1)
	return c.client.Do(ctx, cmd)
}

func (c *counting) DoMulti(ctx context.Context, cmds []redisstore.Cmd, replies []redisstore.Reply, exclusive bool) {
	c.trips.Add(1)
	c.client.DoMulti(ctx, cmds, replies, exclusive)
}

// TestPermitOneRoundTrip: taking a free permit, and giving it back, is
// one round trip each whatever the limit and however many permits are
// held (issue #17's cost target).
func TestPermitOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := &counting{client: client{c: srv.NewClient(t)}}
	s, err := redisstore.New(c, "redis", "redis", nil, []Option{WithPrefix("trips:")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Load the scripts: a first run may find them missing (NOSCRIPT).
	if _, err := s.AcquirePermit(ctx, "warm", "t", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleasePermit(ctx, "warm", "t"); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 10, 1000} {
		r := fmt.Sprint("r", limit)
		for i := range limit - 1 {
			if _, err := s.AcquirePermit(ctx, r, fmt.Sprint("other", i), limit, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		before := c.trips.Load()
		if _, err := s.AcquirePermit(ctx, r, "last", limit, time.Minute); err != nil {
			t.Fatalf("AcquirePermit of the last of %d permits = %v", limit, err)
		}
		if n := c.trips.Load() - before; n != 1 {
			t.Errorf("AcquirePermit of the last of %d permits took %d round trips; want 1", limit, n)
		}
		before = c.trips.Load()
		if err := s.ReleasePermit(ctx, r, "last"); err != nil {
			t.Fatal(err)
		}
		if n := c.trips.Load() - before; n != 1 {
			t.Errorf("ReleasePermit with %d permits held took %d round trips; want 1", limit, n)
		}
		if n, err := s.Permits(ctx, r); err != nil || n != limit-1 {
			t.Errorf("Permits = %d, %v; want %d", n, err, limit-1)
		}
	}
	// The count sees a second round trip: after SCRIPT FLUSH, the
	// script is sent again in full.
	if err := srv.Do("SCRIPT", "FLUSH").Error(); err != nil {
		t.Fatal(err)
	}
	before := c.trips.Load()
	if _, err := s.AcquirePermit(ctx, "flushed", "t", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := c.trips.Load() - before; n != 2 {
		t.Errorf("AcquirePermit after SCRIPT FLUSH took %d round trips; want 2 (NOSCRIPT, then EVAL)", n)
	}
}
