package goredis

import "github.com/lockkit/lock"

// Store keeps counted permits natively: see Permits in the documentation
// of stores/redis.
var (
	_ lock.Permitter    = (*Store)(nil)
	_ lock.PermitWaiter = (*Store)(nil)
)
