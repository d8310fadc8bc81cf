package conformance_test

import (
	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/brokenstore"
)

// The controls of the Holder rule.
func init() {
	controls["holder-leaks-token"] = control{
		store: func() lock.Store { return brokenstore.HolderLeaksToken() },
		rule:  "Holder", wants: []string{`(the public part only, never the secret) = "se~cret-`, `want "host-1 4242 lockctl 2026-11-24T20:00:00Z é", true, nil`},
	}
	controls["holder-of-expired"] = control{
		store: func() lock.Store { return brokenstore.HolderOfExpired() },
		rule:  "Holder", wants: []string{`Holder(r) after Release(r, a) = "host-1 4242 lockctl 2026-11-24T20:00:00Z é", true, nil; want "", false, nil`},
	}
}
