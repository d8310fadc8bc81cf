package etcd_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/internal/testing/faultsuite"
)

// Leaders on etcd under faults (issue #19), as internal/testing/faultsuite
// runs them on the other stores (see faultsuite.ElectionFaults): three
// candidates, each with a client of its own whose connections to every
// member go through fault proxies, under a pause, slow renewals, lost
// replies and a kill. Never two leaders whose terms overlap, and each
// term's fence — the create revision of the role's key, which the cluster
// makes strictly increasing — above every earlier term's. Each fault's
// positive control runs it alone with leaders that ignore their term's
// context: the faulted one acts on while its successor leads, and the
// judge must see it.
func TestElectionUnderFaults(t *testing.T) {
	// The shortest lease: etcd rounds TTLs up to whole seconds and may
	// notice an expired lease half a second late, so each fault outlasts
	// the faulted leader's lease by long enough for another to be elected.
	const ttl = etcdtest.MinTTL
	plan := faultsuite.ElectionFaults{TTL: ttl, Start: ttl * 15 / 10, Pause: 3 * ttl, Long: 4 * ttl}
	for _, name := range plan.Runs() {
		t.Run(name, func(t *testing.T) {
			s := begin(t, name, name != faultsuite.ElectionScenario)
			var candidates []lock.Locker
			var links faultsuite.Links
			for range 3 {
				proxies, addrs := s.proxies()
				l, err := s.locker(addrs...)
				if err != nil {
					t.Fatal(err)
				}
				candidates, links = append(candidates, l), append(links, proxies)
			}
			s.finish(plan.Run(s.ctx, t, name, "etcd-3", candidates, links), ttl+2*time.Second)
		})
	}
}
