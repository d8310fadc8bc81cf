package memcache

import (
	"errors"
	"io"
	"syscall"

	gomemcache "github.com/bradfitz/gomemcache/memcache"
)

// gomemcache keeps idle connections, and after memcached restarts each of
// them fails its next request at once (EOF, a reset). A request that may
// be sent twice — a read (RaiseFence's incr by 0 included), or
// ForceRelease's delete, which deletes whoever holds the lock anyway — is
// sent again then, on the next connection, up
// to once per idle connection the client keeps and once more on a new
// one: so that a Release or Extend after a restart reports the lock not
// held, as it is, rather than the dead connection. An add or a cas whose
// connection broke may have taken effect, and is not sent again.

// get reads key with a gets, sent again on a broken connection.
func (s *Store) get(key string) (*gomemcache.Item, error) {
	for attempt := 0; ; attempt++ {
		item, err := s.client.Get(key)
		if !s.resend(attempt, err) {
			return item, err
		}
	}
}

// resend reports whether a request that may be sent twice, whose attempt
// (counting from 0) failed with err, is sent again.
func (s *Store) resend(attempt int, err error) bool {
	idle := s.client.MaxIdleConns
	if idle <= 0 {
		idle = gomemcache.DefaultMaxIdleConns
	}
	return err != nil && attempt <= idle && brokenConnection(err)
}

// brokenConnection reports whether err says that the connection was
// closed by the other end.
func brokenConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
