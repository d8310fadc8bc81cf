package memcache

// SetBeforeCAS makes Release and Extend call f between their gets and their
// cas, with the key, so tests can make things happen inside that window.
func SetBeforeCAS(s *Store, f func(key string)) { s.beforeCAS = f }

// Key returns the memcached key of resource.
func Key(s *Store, resource string) string { return s.key(resource) }

// SetBeforeFenceIncr makes AcquireFenced call f before each incr that
// draws fences, with the number of acquisitions it serves (one at a time:
// the incrs are sent one after another).
func SetBeforeFenceIncr(s *Store, f func(n int)) { s.beforeFenceIncr = f }

// QueuedFences returns the number of acquisitions waiting to share the
// next incr.
func QueuedFences(s *Store) int {
	s.fences.mu.Lock()
	defer s.fences.mu.Unlock()
	return s.fences.n
}

// RecordedCAS returns the CAS id s recorded for resource's lock under
// token, if it recorded one, without forgetting it.
func RecordedCAS(s *Store, resource, token string) (uint64, bool) {
	s.cas.mu.Lock()
	defer s.cas.mu.Unlock()
	r, ok := s.cas.held[casKey{s.key(resource), token}]
	return r.cas, ok
}

// SetSamePidAndStart makes every connection s dials take the run it
// reached for pid 1, started at 0, as a memcached in a container that
// restarts within a second is: only the run's mark tells runs apart.
func SetSamePidAndStart(s *Store) {
	s.pipe.runSeen = func(r *serverRun) { r.pid, r.started = 1, 0 }
}
