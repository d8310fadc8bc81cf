package postgres_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/stores/postgres"
)

// Leaders on PostgreSQL under faults (issue #19), as
// internal/testing/faultsuite runs them on the other stores: three
// candidates, each with a pool of its own through a fault proxy. The
// leader is paused (its connections held for two TTLs) and later killed
// (held for good; it never resigns). Never two leaders whose terms
// overlap, and each term's fence — from the store's sequence — above every
// earlier term's. The positive control's leaders ignore their term's
// context: the paused one acts on while its successor leads, and the
// judge must see it.
func TestFaultElection(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "election-faults"
		if control {
			name = "election-careless-leader"
		}
		t.Run(name, func(t *testing.T) {
			srv := pgtest.Shared(t)
			f := beginFault(t, name, srv)
			const ttl = 500 * time.Millisecond
			e := faultkit.Election{TTL: ttl, Duration: 8 * ttl, Careless: control}
			var proxies []*faultproxy.Proxy
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
				e.Candidates, proxies = append(e.Candidates, l), append(proxies, p)
			}
			stall := func(i int) { proxies[i].Set(faultproxy.Both, faultproxy.Hold()) }
			heal := func(i int) { proxies[i].Heal() }
			e.Faults = []faultkit.LeaderFault{{At: ttl * 16 / 10, For: 2 * ttl, Inject: stall, Heal: heal}}
			if !control {
				e.Faults = append(e.Faults, faultkit.LeaderFault{At: 5 * ttl, Kill: true, Inject: stall, Heal: heal})
			}
			run, err := e.Run(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, term := range run.Terms {
				t.Logf("term %+v", term)
			}
			rep := f.finish(run.Report(name, "postgres"), ttl)
			if control {
				if rep.Violations == 0 {
					t.Errorf("%s: leaders ignoring their term: no overlap found: the judge is blind: %s", name, rep.Line())
				}
				return
			}
			if bad := rep.Unsafe(); bad != "" {
				t.Errorf("%s: %s", name, bad)
			}
			if run.Faults != len(e.Faults) || run.Lost() == 0 || len(run.Terms) < 4 {
				t.Errorf("%d faults on a leader, %d terms, %d lost; want the %d faults, and the pause to cost a term: %s",
					run.Faults, len(run.Terms), run.Lost(), len(e.Faults), rep.Line())
			}
		})
	}
}
