package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

type quorumValue interface {
	Met(granted, total int) bool
	String() string
}

// The quorum math for 1 to 7 stores, every count of grants.
func TestQuorumMath(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for g := 0; g <= n; g++ {
			if got, want := (quorum.Majority{}).Met(g, n), 2*g > n; got != want {
				t.Errorf("Majority.Met(%d, %d) = %v; want %v", g, n, got, want)
			}
			if got, want := (quorum.Unanimous{}).Met(g, n), g == n; got != want {
				t.Errorf("Unanimous.Met(%d, %d) = %v; want %v", g, n, got, want)
			}
			for k := 0; k <= n+1; k++ {
				if got, want := quorum.AtLeast(k).Met(g, n), g >= k; got != want {
					t.Errorf("AtLeast(%d).Met(%d, %d) = %v; want %v", k, g, n, got, want)
				}
			}
		}
	}
}

// NewMulti accepts exactly the quorums that need more than half of its
// stores and can be met, and refuses the others with ErrInvalid.
func TestNewMultiAcceptsOnlyExclusiveQuorums(t *testing.T) {
	for n := 1; n <= 7; n++ {
		stores := make([]lock.Store, n)
		for i := range stores {
			stores[i] = memory.New(memory.WithName(fmt.Sprintf("m%d", i)))
		}
		cases := []struct {
			q  quorumValue
			ok bool
		}{{quorum.Majority{}, true}, {quorum.Unanimous{}, true}}
		for k := -1; k <= n+1; k++ {
			cases = append(cases, struct {
				q  quorumValue
				ok bool
			}{quorum.AtLeast(k), 2*k > n && k <= n})
		}
		for _, c := range cases {
			l, err := lock.NewMulti(stores, &lock.Options{Quorum: c.q})
			switch {
			case c.ok && err != nil:
				t.Errorf("NewMulti(%d stores, %v) = %v; want nil", n, c.q, err)
			case !c.ok && !errors.Is(err, lock.ErrInvalid):
				t.Errorf("NewMulti(%d stores, %v) = %v; want ErrInvalid", n, c.q, err)
			case c.ok:
				k, err := l.TryLock(context.Background(), "r", time.Minute)
				if err != nil {
					t.Errorf("TryLock on %d stores, %v = %v; want nil", n, c.q, err)
					continue
				}
				if err := l.Unlock(context.Background(), k); err != nil {
					t.Errorf("Unlock on %d stores, %v = %v; want nil", n, c.q, err)
				}
			}
		}
	}
}

// With one store down, a majority of three still locks; unanimity does
// not, and says the stores were unavailable, not that the lock was held.
func TestQuorumWithAStoreDown(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		q    quorumValue
		want error
	}{{quorum.Majority{}, nil}, {quorum.Unanimous{}, lock.ErrUnavailable}, {quorum.AtLeast(3), lock.ErrUnavailable}} {
		down := memory.New(memory.WithName("down"))
		down.Inject(memory.Fault{Err: errors.New("connection refused"), Times: memory.Always})
		l, err := lock.NewMulti([]lock.Store{memory.New(), memory.New(), down}, &lock.Options{Quorum: c.q})
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.TryLock(ctx, "r", time.Minute)
		if (c.want == nil) != (err == nil) || (c.want != nil && (!errors.Is(err, c.want) || errors.Is(err, lock.ErrNotAcquired))) {
			t.Errorf("TryLock with %v, one of three stores down = %v; want %v", c.q, err, c.want)
		}
	}
}
