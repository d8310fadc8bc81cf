package gocronlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	gocronlock "github.com/lockkit/lock/adapters/gocron"
	"github.com/lockkit/lock/stores/memory"
)

// A locker that lets several holders in at once would have every run
// refused by lock.RunOnce, each a silent skip: NewLocker refuses it
// instead. The exclusive lockers of the same kinds are taken.
func TestNewLockerRefusesSharedLockers(t *testing.T) {
	base := single(t, memory.New())
	sem, err := lock.NewSemaphore(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	one, err := lock.NewSemaphore(base, 1)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := lock.NewRWLocker(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]lock.Locker{"a Semaphore of 2": sem, "a reader side": rw.Reader()} {
		if _, err := gocronlock.NewLocker(l, time.Second); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewLocker(%s) = %v; want ErrInvalid", name, err)
		}
	}
	for name, l := range map[string]lock.Locker{"a Semaphore of 1": one, "a writer side": rw.Writer()} {
		if _, err := gocronlock.NewLocker(l, time.Second); err != nil {
			t.Errorf("NewLocker(%s) = %v; want nil", name, err)
		}
	}
}
