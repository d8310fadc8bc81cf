package redis

import "github.com/lockkit/lock"

// Holder, promoted from the Redis engine, tells who holds a lock: see
// the package documentation.
var _ lock.HolderReader = (*Store)(nil)
