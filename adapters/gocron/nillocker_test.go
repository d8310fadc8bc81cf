package gocronlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
	gocronlock "github.com/lockkit/lock/adapters/gocron"
)

// A nil pointer in the lock.Locker interface is a nil locker: NewLocker
// refuses it, as it refuses a nil interface and as the lock library's
// constructors do, rather than accepting it and failing every run (which
// gocron would take as a skip, so that the job never ran).
func TestNewLockerRefusesNilPointerLocker(t *testing.T) {
	for name, locker := range map[string]lock.Locker{
		"*SingleLocker": (*lock.SingleLocker)(nil),
		"*MultiLocker":  (*lock.MultiLocker)(nil),
	} {
		if l, err := gocronlock.NewLocker(locker, time.Second); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("NewLocker(nil %s, 1s) = %v, %v; want ErrInvalid", name, l, err)
		}
	}
}
