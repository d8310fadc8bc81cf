package quorum_test

import (
	"testing"

	"github.com/lockkit/lock/quorum"
)

func TestContractQuorums(t *testing.T) {
	for _, c := range []struct {
		q              interface{ Met(g, n int) bool }
		granted, total int
		want           bool
	}{
		{quorum.Majority{}, 2, 3, true}, {quorum.Majority{}, 1, 3, false},
		{quorum.Majority{}, 2, 4, false}, {quorum.Majority{}, 3, 4, true},
		{quorum.Majority{}, 3, 5, true}, {quorum.Majority{}, 1, 1, true}, {quorum.Majority{}, 0, 1, false},
		{quorum.Unanimous{}, 3, 3, true}, {quorum.Unanimous{}, 2, 3, false},
		{quorum.AtLeast(2), 2, 3, true}, {quorum.AtLeast(2), 1, 3, false}, {quorum.AtLeast(2), 3, 3, true},
	} {
		if got := c.q.Met(c.granted, c.total); got != c.want {
			t.Errorf("%v.Met(%d, %d) = %v; want %v", c.q, c.granted, c.total, got, c.want)
		}
	}
	if s := quorum.AtLeast(3).String(); s != "at least 3" {
		t.Errorf("AtLeast(3).String() = %q", s)
	}
}
