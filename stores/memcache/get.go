package memcache

import (
	"errors"
	"io"
	"syscall"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// get reads key with a gets. gomemcache keeps idle connections, and after
// memcached restarts each of them fails its next request at once (EOF, a
// reset): a read is sent again then, on the next connection, up to once
// per idle connection the client keeps and once more on a new one — so
// that a Release or Extend after a restart reports the lock not held, as
// it is, rather than the dead connection. Only reads are sent again: an
// add or a cas whose connection broke may have taken effect.
func (s *Store) get(key string) (*gomemcache.Item, error) {
	idle := s.client.MaxIdleConns
	if idle <= 0 {
		idle = gomemcache.DefaultMaxIdleConns
	}
	for attempt := 0; ; attempt++ {
		item, err := s.client.Get(key)
		if err == nil || attempt > idle || !brokenConnection(err) {
			return item, err
		}
	}
}

// brokenConnection reports whether err says that the connection was
// closed by the other end.
func brokenConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
