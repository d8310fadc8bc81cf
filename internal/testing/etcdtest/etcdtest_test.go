package etcdtest_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// The fixture's own contract: a cluster with a leader; killing the
// leader elects another among the survivors; a restarted member rejoins
// with its data (the revision it had, or later).
func TestClusterLeaderChange(t *testing.T) {
	c := etcdtest.Start(t, 3, nil)
	old, err := c.Leader()
	if err != nil {
		t.Fatalf("Leader() of a fresh cluster: %v", err)
	}
	before, err := old.Status(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	next, err := c.WaitLeader(15 * time.Second)
	if err != nil {
		t.Fatalf("no new leader after the leader was killed: %v", err)
	}
	if next == old {
		t.Fatalf("Leader() = %s, the killed member", next.Name)
	}
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	after, err := old.Status(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if after.Revision < before.Revision || after.Term <= before.Term {
		t.Errorf("restarted member: revision %d, term %d; want at least revision %d and a later term than %d", after.Revision, after.Term, before.Revision, before.Term)
	}
}
