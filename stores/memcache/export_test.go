package memcache

// SetBeforeCAS makes Release and Extend call f between their gets and their
// cas, with the key, so tests can make things happen inside that window.
func SetBeforeCAS(s *Store, f func(key string)) { s.beforeCAS = f }

// Key returns the memcached key of resource.
func Key(s *Store, resource string) string { return s.key(resource) }
