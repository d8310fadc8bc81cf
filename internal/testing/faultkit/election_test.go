package faultkit_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/stores/memory"
)

// cutStore is one candidate's way to a shared memory store, which a fault
// can cut: calls then wait until it is healed, or until their context
// ends, with no effect.
type cutStore struct {
	*memory.Store
	mu     sync.Mutex
	healed chan struct{} // nil when not cut
}

func (c *cutStore) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.healed == nil {
		c.healed = make(chan struct{})
	}
}

func (c *cutStore) heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.healed != nil {
		close(c.healed)
		c.healed = nil
	}
}

func (c *cutStore) pass(ctx context.Context) error {
	c.mu.Lock()
	healed := c.healed
	c.mu.Unlock()
	if healed == nil {
		return nil
	}
	select {
	case <-healed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *cutStore) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	_, err := c.AcquireFenced(ctx, r, tok, ttl)
	return err
}

func (c *cutStore) AcquireFenced(ctx context.Context, r, tok string, ttl time.Duration) (uint64, error) {
	if err := c.pass(ctx); err != nil {
		return 0, err
	}
	return c.Store.AcquireFenced(ctx, r, tok, ttl)
}

func (c *cutStore) Release(ctx context.Context, r, tok string) error {
	if err := c.pass(ctx); err != nil {
		return err
	}
	return c.Store.Release(ctx, r, tok)
}

func (c *cutStore) Extend(ctx context.Context, r, tok string, ttl time.Duration) error {
	if err := c.pass(ctx); err != nil {
		return err
	}
	return c.Store.Extend(ctx, r, tok, ttl)
}

// election is an election scenario among three candidates over one memory
// store, each through a cutStore: a pause of the leader (cut for two TTLs)
// at 1.6 TTLs and, unless careless, a kill at 6 TTLs.
func election(t *testing.T, careless bool) (faultkit.ElectionRun, *memory.Store) {
	const ttl = 500 * time.Millisecond
	store := memory.New()
	e := faultkit.Election{TTL: ttl, Duration: 8 * ttl, Careless: careless}
	var links []*cutStore
	for range 3 {
		link := &cutStore{Store: store}
		l, err := lock.NewSingle(struct {
			lock.Store
			lock.Fencer
			lock.Extender
			lock.Waiter
		}{link, link, link, store}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.Candidates, links = append(e.Candidates, l), append(links, link)
	}
	cut := func(i int) { links[i].cut() }
	heal := func(i int) { links[i].heal() }
	e.Faults = []faultkit.LeaderFault{{At: ttl * 16 / 10, For: 2 * ttl, Inject: cut, Heal: heal}}
	if !careless {
		e.Faults = append(e.Faults, faultkit.LeaderFault{At: 6 * ttl, Kill: true, Inject: cut, Heal: heal})
	}
	run, err := e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range run.Terms {
		t.Logf("term %+v", term)
	}
	return run, store
}

// The runner on the memory store, in fake time: a paused leader loses its
// term before the next is elected, a killed one is replaced, and the
// report finds nothing unsafe; with leaders that ignore their term (the
// positive control), it finds the overlap.
func TestElection(t *testing.T) {
	t.Run("safe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, store := election(t, false)
			rep := run.Report("election-faults", "memory")
			if rep.Violations > 0 || rep.StaleAccepted > 0 {
				t.Errorf("overlapping terms or fences out of order: %s", rep.Line())
			}
			// A leader that heeds its term acts only within the validity
			// the library gave it: its record keeps that bound, not the
			// one a loss cut afterwards (the judge of the terms as bounded
			// then saw lost terms end before their last action, too early
			// to find an overlap).
			for _, term := range run.Terms {
				if !term.Killed && term.LastAct > term.ValidUntil {
					t.Errorf("term %+v: acted after the validity it records; want the bound it was given while it acted", term)
				}
			}
			if run.Faults != 2 || run.Lost() == 0 || len(run.Terms) < 4 {
				t.Errorf("%d faults on a leader, %d terms, %d lost; want both faults, and the pause to cost a term: %s", run.Faults, len(run.Terms), run.Lost(), rep.Line())
			}
			if n := len(store.Resources()); n != 0 {
				t.Errorf("%d resources held after the run; want 0", n)
			}
		})
	})
	t.Run("careless", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			run, _ := election(t, true)
			if rep := run.Report("election-careless-leader", "memory"); rep.Violations == 0 {
				t.Errorf("leaders ignoring their term: no overlap found: %s", rep.Line())
			}
		})
	})
}

// The report's positive controls, on terms made up: two terms that
// overlap, and a fence that does not increase, are both reported; a term
// whose validity had ended when it was heard of does not count in the
// fence order.
func TestElectionReport(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	term := func(c int, fence uint64, elected, lastAct, resigned, validUntil int) faultkit.Term {
		return faultkit.Term{Candidate: c, Fence: fence, Elected: ms(elected), LastAct: ms(lastAct), Resigned: ms(resigned), ValidUntil: ms(validUntil)}
	}
	for _, tc := range []struct {
		name              string
		terms             []faultkit.Term
		violations, stale int
	}{
		{"apart", []faultkit.Term{term(0, 10, 0, 90, 100, 500), term(1, 11, 100, 190, 200, 600)}, 0, 0},
		{"acting past its term", []faultkit.Term{term(0, 10, 0, 300, 310, 250), term(1, 11, 260, 290, 300, 700)}, 1, 0},
		{"elected within the last term's validity", []faultkit.Term{term(0, 10, 0, 100, 300, 250), term(1, 11, 200, 290, 300, 700)}, 1, 0},
		{"fence repeated", []faultkit.Term{term(0, 10, 0, 90, 100, 500), term(1, 10, 100, 190, 200, 600)}, 0, 1},
		{"fence back", []faultkit.Term{term(0, 10, 0, 90, 100, 500), term(1, 9, 100, 190, 200, 600)}, 0, 1},
		{"late term out of order", []faultkit.Term{term(0, 10, 0, 90, 100, 500), term(1, 9, 700, 700, 700, 650)}, 0, 0},
	} {
		rep := faultkit.ElectionRun{Terms: tc.terms}.Report("election", "made-up")
		if rep.Violations != tc.violations || rep.StaleAccepted != tc.stale {
			t.Errorf("%s: %d violations, %d fences out of order; want %d and %d", tc.name, rep.Violations, rep.StaleAccepted, tc.violations, tc.stale)
		}
	}
}
