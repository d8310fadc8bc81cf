package etcd_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
)

// Leaders on etcd under faults (issue #19), as internal/testing/faultsuite
// runs them on the other stores: three candidates, each with a client of
// its own whose connections to every member go through fault proxies. The
// leader is paused (its connections held for three TTLs) and later killed
// (held for good; it never resigns). Never two leaders whose terms
// overlap, and each term's fence — the create revision of the role's key,
// which the cluster makes strictly increasing — above every earlier
// term's. The positive control's leaders ignore their term's context: the
// paused one acts on while its successor leads, and the judge must see it.
func TestElectionUnderFaults(t *testing.T) {
	twins(t, "election-faults", "election-careless-leader", func(t *testing.T, s *scenario) {
		// The shortest lease: etcd rounds TTLs up to whole seconds and may
		// notice an expired lease half a second late, so a pause of three
		// TTLs outlasts the paused leader's lease.
		const ttl = etcdtest.MinTTL
		e := faultkit.Election{TTL: ttl, Duration: 9 * ttl, Careless: s.control}
		var links [][]*faultproxy.Proxy
		for range 3 {
			proxies, addrs := s.proxies()
			l, err := s.locker(addrs...)
			if err != nil {
				t.Fatal(err)
			}
			e.Candidates, links = append(e.Candidates, l), append(links, proxies)
		}
		stall := func(i int) {
			for _, p := range links[i] {
				p.Set(faultproxy.Both, faultproxy.Hold())
			}
		}
		heal := func(i int) {
			for _, p := range links[i] {
				p.Heal()
			}
		}
		e.Faults = []faultkit.LeaderFault{{At: ttl * 15 / 10, For: 3 * ttl, Inject: stall, Heal: heal}}
		if s.control {
			e.Duration = 5 * ttl // the pause is enough to show the overlap
		} else {
			e.Faults = append(e.Faults, faultkit.LeaderFault{At: 6 * ttl, Kill: true, Inject: stall, Heal: heal})
		}
		run, err := e.Run(s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, term := range run.Terms {
			t.Logf("term %+v", term)
		}
		rep := run.Report(s.name, "etcd-3")
		if !s.control && (run.Faults != len(e.Faults) || run.Lost() == 0 || len(run.Terms) < 4) {
			t.Errorf("%d faults on a leader, %d terms, %d lost; want the %d faults, and the pause to cost a term: %s",
				run.Faults, len(run.Terms), run.Lost(), len(e.Faults), rep.Line())
		}
		s.finish(rep, ttl+2*time.Second)
	})
}
