package faultkit

import (
	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// Semaphores turns cfg into a workload on semaphores: each client's
// locker becomes a [lock.Semaphore] of limit over the locker cfg.NewLocker
// makes, and the checkers allow limit holders at once. It drops
// cfg.ServerTTL, which reads a resource's lock key: permits are not that
// key. Set cfg.Limit afterwards to check against another limit (a positive
// control).
func Semaphores(cfg *contention.Config, limit int) {
	cfg.NewLocker = wrap(cfg.NewLocker, func(_ int, l lock.Locker) (lock.Locker, error) {
		return lock.NewSemaphore(l, limit)
	})
	cfg.Limit, cfg.ServerTTL = limit, nil
}

// ReadersWriters turns cfg into a workload on read-write locks: clients
// below writers take the Writer side of a [lock.RWLocker] over the locker
// cfg.NewLocker makes, the others its Reader side, and the checkers let
// readers share. It drops cfg.ServerTTL, as Semaphores does.
func ReadersWriters(cfg *contention.Config, writers int) {
	cfg.Shared = func(client int) bool { return client >= writers }
	cfg.NewLocker = wrap(cfg.NewLocker, func(client int, l lock.Locker) (lock.Locker, error) {
		rw, err := lock.NewRWLocker(l)
		if err != nil {
			return nil, err
		}
		if client >= writers {
			return rw.Reader(), nil
		}
		return rw.Writer(), nil
	})
	cfg.ServerTTL = nil
}

// wrap returns newLocker with each locker it makes passed through f; a
// client whose locker f refuses is closed at once.
func wrap(newLocker func(int) (lock.Locker, func(), error), f func(int, lock.Locker) (lock.Locker, error)) func(int) (lock.Locker, func(), error) {
	return func(client int) (lock.Locker, func(), error) {
		l, closeFn, err := newLocker(client)
		if err == nil {
			l, err = f(client, l)
		}
		if err != nil && closeFn != nil {
			closeFn()
			closeFn = nil
		}
		return l, closeFn, err
	}
}
