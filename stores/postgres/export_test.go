package postgres

import "testing"

// Waiting returns how many callers of the store are in line for
// resource, blocked once they have marked the lock as waited for.
func (s *Store) Waiting(resource string) int {
	wl := s.line(resource)
	if wl == nil {
		return 0
	}
	return int(wl.blocked.Load())
}

// line returns the line of callers waiting for resource, or nil.
func (s *Store) line(resource string) *waitLine {
	s.wait.mu.Lock()
	defer s.wait.mu.Unlock()
	return s.wait.lines[resource]
}

// Notes returns how many notifications the store has dispatched to its
// callers waiting for resource, while any is.
func (s *Store) Notes(resource string) uint64 {
	wl := s.line(resource)
	if wl == nil {
		return 0
	}
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return wl.notes
}

// Listening reports whether the store has a listening connection.
func (s *Store) Listening() bool {
	s.wait.mu.Lock()
	defer s.wait.mu.Unlock()
	return s.wait.ln != nil
}

// Table returns the store's table, quoted and qualified.
func (s *Store) Table() string { return s.names.table }

// Sequence returns the store's sequence of fences, quoted and qualified.
func (s *Store) Sequence() string { return s.names.sequence }

// Channel returns the channel of the store's release notifications, as
// the server resolves the store's table, which must exist.
func (s *Store) Channel(t testing.TB) string {
	t.Helper()
	var channel string
	if err := s.pool.QueryRow(t.Context(), "SELECT "+s.names.channel).Scan(&channel); err != nil {
		t.Fatalf("the channel of %s: %v", s.names.table, err)
	}
	return channel
}

// Schema returns the schema of the store's table, as configured.
func (s *Store) Schema() string { return s.config.schema }
