package quorum_test

import (
	"testing"

	"github.com/lockkit/lock/quorum"
)

func TestMet(t *testing.T) {
	type q interface{ Met(granted, total int) bool }
	cases := []struct {
		name           string
		q              q
		granted, total int
		want           bool
	}{
		{"majority 3 of 5", quorum.Majority{}, 3, 5, true},
		{"majority 2 of 5", quorum.Majority{}, 2, 5, false},
		{"majority 2 of 4", quorum.Majority{}, 2, 4, false},
		{"majority 3 of 4", quorum.Majority{}, 3, 4, true},
		{"majority 1 of 1", quorum.Majority{}, 1, 1, true},
		{"majority 0 of 1", quorum.Majority{}, 0, 1, false},
		{"unanimous 5 of 5", quorum.Unanimous{}, 5, 5, true},
		{"unanimous 4 of 5", quorum.Unanimous{}, 4, 5, false},
		{"at least 4 of 5 with 4", quorum.AtLeast(4), 4, 5, true},
		{"at least 4 of 5 with 3", quorum.AtLeast(4), 3, 5, false},
	}
	for _, c := range cases {
		if got := c.q.Met(c.granted, c.total); got != c.want {
			t.Errorf("%s: Met(%d, %d) = %v; want %v", c.name, c.granted, c.total, got, c.want)
		}
	}
}

func TestString(t *testing.T) {
	for q, want := range map[interface{ String() string }]string{
		quorum.Majority{}:  "majority",
		quorum.Unanimous{}: "unanimous",
		quorum.AtLeast(3):  "at least 3",
	} {
		if got := q.String(); got != want {
			t.Errorf("String() = %q; want %q", got, want)
		}
	}
}
