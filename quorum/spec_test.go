package quorum_test

// Black-box tests of the documented contracts of package quorum, and of how
// NewMulti validates quorums.

import (
	"errors"
	"testing"

	lock "github.com/lockkit/lock"
	"github.com/lockkit/lock/quorum"
	"github.com/lockkit/lock/stores/memory"
)

var (
	_ lock.Quorum = quorum.Majority{}
	_ lock.Quorum = quorum.Unanimous{}
	_ lock.Quorum = quorum.AtLeast(2)
)

func TestSpecMajorityMet(t *testing.T) {
	for _, c := range []struct {
		g, n int
		want bool
	}{
		{3, 5, true}, {2, 5, false}, {2, 3, true}, {1, 3, false},
		{3, 4, true}, {2, 4, false}, {1, 1, true}, {0, 1, false},
		{1, 2, false}, {2, 2, true}, {5, 5, true}, {4, 7, true}, {3, 7, false},
	} {
		if got := (quorum.Majority{}).Met(c.g, c.n); got != c.want {
			t.Errorf("Majority.Met(%d, %d) = %v; want %v", c.g, c.n, got, c.want)
		}
	}
}

func TestSpecUnanimousMet(t *testing.T) {
	for _, c := range []struct {
		g, n int
		want bool
	}{{5, 5, true}, {4, 5, false}, {1, 1, true}, {0, 1, false}, {2, 3, false}} {
		if got := (quorum.Unanimous{}).Met(c.g, c.n); got != c.want {
			t.Errorf("Unanimous.Met(%d, %d) = %v; want %v", c.g, c.n, got, c.want)
		}
	}
}

func TestSpecAtLeastMet(t *testing.T) {
	for _, c := range []struct {
		q    quorum.AtLeast
		g, n int
		want bool
	}{
		{3, 3, 5, true}, {3, 2, 5, false}, {3, 4, 5, true}, {3, 5, 5, true},
		{1, 1, 1, true}, {1, 0, 1, false}, {4, 4, 4, true},
	} {
		if got := c.q.Met(c.g, c.n); got != c.want {
			t.Errorf("AtLeast(%d).Met(%d, %d) = %v; want %v", int(c.q), c.g, c.n, got, c.want)
		}
	}
}

func TestSpecMonotonic(t *testing.T) {
	qs := []lock.Quorum{quorum.Majority{}, quorum.Unanimous{}, quorum.AtLeast(1), quorum.AtLeast(3)}
	for _, q := range qs {
		for n := 1; n <= 9; n++ {
			for g := 0; g < n; g++ {
				if q.Met(g, n) && !q.Met(g+1, n) {
					t.Errorf("%v.Met(%d, %d) = true but Met(%d, %d) = false; want monotonic", q, g, n, g+1, n)
				}
			}
		}
	}
}

func TestSpecStrings(t *testing.T) {
	for _, c := range []struct {
		q    interface{ String() string }
		want string
	}{
		{quorum.Majority{}, "majority"},
		{quorum.Unanimous{}, "unanimous"},
		{quorum.AtLeast(3), "at least 3"},
		{quorum.AtLeast(1), "at least 1"},
	} {
		if got := c.q.String(); got != c.want {
			t.Errorf("String() = %q; want %q", got, c.want)
		}
	}
}

func specStores(n int) []lock.Store {
	var ss []lock.Store
	for range n {
		ss = append(ss, memory.New())
	}
	return ss
}

type specNonMonotonic struct{}

func (specNonMonotonic) Met(g, n int) bool { return g == n-1 } // met with n-1, not with n

func TestSpecNewMultiAcceptsMoreThanHalf(t *testing.T) {
	for _, c := range []struct {
		name string
		q    lock.Quorum
		n    int
	}{
		{"nil (majority)", nil, 3},
		{"majority of 5", quorum.Majority{}, 5},
		{"unanimous of 3", quorum.Unanimous{}, 3},
		{"at least 3 of 4", quorum.AtLeast(3), 4},
		{"at least 2 of 3", quorum.AtLeast(2), 3},
	} {
		if _, err := lock.NewMulti(specStores(c.n), &lock.Options{Quorum: c.q}); err != nil {
			t.Errorf("NewMulti(%d stores, %s) = %v; want nil", c.n, c.name, err)
		}
	}
}

func TestSpecNewMultiRefusesHalfOrLess(t *testing.T) {
	for _, c := range []struct {
		name string
		q    lock.Quorum
		n    int
	}{
		{"at least 2 of 4 (half)", quorum.AtLeast(2), 4},
		{"at least 1 of 3", quorum.AtLeast(1), 3},
		{"at least 0 of 3", quorum.AtLeast(0), 3},
	} {
		if _, err := lock.NewMulti(specStores(c.n), &lock.Options{Quorum: c.q}); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewMulti(%d stores, %s) = %v; want ErrInvalid", c.n, c.name, err)
		}
	}
}

func TestSpecNewMultiRefusesUnmeetable(t *testing.T) {
	if _, err := lock.NewMulti(specStores(3), &lock.Options{Quorum: quorum.AtLeast(4)}); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewMulti(3 stores, at least 4) = %v; want ErrInvalid (all stores cannot meet it)", err)
	}
}

func TestSpecNewMultiRefusesNonMonotonic(t *testing.T) {
	if _, err := lock.NewMulti(specStores(5), &lock.Options{Quorum: specNonMonotonic{}}); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewMulti(5 stores, non-monotonic quorum) = %v; want ErrInvalid", err)
	}
}

func TestSpecNewSingleRefusesQuorum(t *testing.T) {
	if _, err := lock.NewSingle(memory.New(), &lock.Options{Quorum: quorum.Majority{}}); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("NewSingle with Options.Quorum set = %v; want ErrInvalid (must be nil)", err)
	}
}
