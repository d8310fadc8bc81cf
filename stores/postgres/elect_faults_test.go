package postgres_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/faultsuite"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// Leaders on PostgreSQL under faults (issue #19), as
// internal/testing/faultsuite runs them on the other stores (see
// faultsuite.ElectionFaults): three candidates, each with a pool of its
// own through a fault proxy, under a pause, slow renewals, lost replies
// and a kill. Never two leaders whose terms overlap, and each term's
// fence — from the store's sequence — above every earlier term's. Each
// fault's positive control runs it alone with leaders that ignore their
// term's context: the faulted one acts on while its successor leads, and
// the judge must see it.
func TestFaultElection(t *testing.T) {
	const ttl = 500 * time.Millisecond
	// Each fault lasts long enough for a successor to be elected after
	// the faulted leader's lease ends, however the waiters back off.
	plan := faultsuite.ElectionFaults{TTL: ttl, Start: ttl * 16 / 10, Pause: 4 * ttl, Long: 5 * ttl}
	for _, name := range plan.Runs() {
		t.Run(name, func(t *testing.T) {
			srv := pgtest.Shared(t)
			f := beginFault(t, name, srv)
			var candidates []lock.Locker
			var links faultsuite.Links
			for range 3 {
				p, url := f.proxy(srv)
				s, err := postgres.New(f.pool(url), f.table, postgres.WithSweepInterval(0))
				if err != nil {
					t.Fatal(err)
				}
				l, err := lock.NewSingle(s, nil)
				if err != nil {
					t.Fatal(err)
				}
				candidates, links = append(candidates, l), append(links, []*faultproxy.Proxy{p})
			}
			rep := f.finish(plan.Run(f.ctx, t, name, "postgres", candidates, links), ttl)
			if name != faultsuite.ElectionScenario {
				if rep.Violations == 0 {
					t.Errorf("%s: leaders ignoring their term: no overlap found: the judge is blind: %s", name, rep.Line())
				}
			} else if bad := rep.Unsafe(); bad != "" {
				t.Errorf("%s: %s", name, bad)
			}
		})
	}
}
