package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/lockkit/lock"
)

// modeFlags say what run takes on RESOURCE: a lock (the default), one of
// N permits of a semaphore (-n, like consul lock -n), or one side of a
// read-write lock (--shared and --exclusive, like flock -s and -x).
type modeFlags struct {
	permits   int
	shared    bool
	exclusive bool
}

func addModeFlags(fs *flag.FlagSet) *modeFlags {
	return newModeFlags(fs,
		"take one of `N` permits: up to N holders at once (a semaphore; every holder must give the same N)",
		"take a shared (read) lock: held by many at once, never while an --exclusive one is",
		"take an exclusive (write) lock: excludes --shared and other --exclusive holders; waiting, it keeps new --shared ones out")
}

// newModeFlags defines -n, --shared and --exclusive with the usages given.
func newModeFlags(fs *flag.FlagSet, permits, shared, exclusive string) *modeFlags {
	m := &modeFlags{}
	fs.Func("n", permits, func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("want a number of permits >= 1")
		}
		m.permits = n
		return nil
	})
	fs.BoolVar(&m.shared, "shared", false, shared)
	fs.BoolVar(&m.exclusive, "exclusive", false, exclusive)
	return m
}

// check checks the flags against each other.
func (m *modeFlags) check() error {
	switch {
	case m.shared && m.exclusive:
		return usagef("--shared and --exclusive: give one of them")
	case m.permits > 0 && (m.shared || m.exclusive):
		return usagef("-n with --shared or --exclusive: a semaphore's permits and a read-write lock are different things; give one")
	}
	return nil
}

// wrap returns the locker that takes what the flags say, over locker.
func (m *modeFlags) wrap(locker lock.Locker) (lock.Locker, error) {
	switch {
	case m.permits > 0:
		return lock.NewSemaphore(locker, m.permits)
	case m.shared || m.exclusive:
		rw, err := lock.NewRWLocker(locker)
		if err != nil {
			return nil, err
		}
		if m.shared {
			return rw.Reader(), nil
		}
		return rw.Writer(), nil
	}
	return locker, nil
}

// plain reports whether the flags take a lock: no permits, no side of a
// read-write lock.
func (m *modeFlags) plain() bool {
	return m.permits == 0 && !m.shared && !m.exclusive
}

// conflict says that what the flags take on resource is held by others.
// A nil m takes a lock.
func (m *modeFlags) conflict(resource string) string {
	switch {
	case m == nil:
	case m.permits > 0:
		return fmt.Sprintf("all %d permits of %q are held by other owners", m.permits, resource)
	case m.shared:
		return fmt.Sprintf("%q is held exclusively by another owner, or one waits for it", resource)
	case m.exclusive:
		return fmt.Sprintf("%q is held by another owner (shared or exclusive)", resource)
	}
	return fmt.Sprintf("%q is held by another owner", resource)
}

// what names what the flags take on resource, for release --force's
// question.
func (m *modeFlags) what(resource string) string {
	switch {
	case m.permits > 0:
		return fmt.Sprintf("the %d permits of %q (-n %d)", m.permits, resource, m.permits)
	case m.shared || m.exclusive:
		return fmt.Sprintf("the read-write lock on %q (the writer's intent and the readers' permits)", resource)
	}
	return strconv.Quote(resource)
}

// forced returns what release --force deletes for the flags on resource,
// the names that run takes (see status_modes.go): locks, by name, on
// every store, and permits that a lone store keeps itself
// (lock.Permitter), by resource.
func (m *modeFlags) forced(set *storeSet, resource string) (locks, permits []string) {
	switch {
	case m.plain():
		return []string{resource}, nil
	case m.permits > 0 && set.keepsPermits():
		return nil, []string{resource}
	case m.permits > 0:
		return slotNames(resource, m.permits), nil
	}
	locks = []string{resource + writeSuffix}
	if set.keepsPermits() {
		return locks, []string{resource + readSuffix}
	}
	return append(locks, slotNames(resource+readSuffix, slotReaders)...), nil
}
