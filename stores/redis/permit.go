package redis

import "github.com/lockkit/lock"

// Store keeps counted permits natively: see Permits in the package
// documentation.
var (
	_ lock.Permitter    = (*Store)(nil)
	_ lock.PermitWaiter = (*Store)(nil)
)
