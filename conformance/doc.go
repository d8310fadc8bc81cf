// Package conformance checks that a [lock.Store] keeps the semantics the
// lockers rely on. A store author runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		conformance.TestStore(t, func(t *testing.T) lock.Store {
//			return mystore.New(newClient(t), mystore.WithPrefix(t.Name()))
//		}, nil)
//	}
//
// TestStore runs one named subtest per rule, each on a fresh store from the
// factory, and reports a broken rule as the call that broke it and what was
// expected:
//
//	--- FAIL: TestConformance/ReleaseWrongToken
//	    Release(r, wrongToken) = nil; want ErrNotHeld
//
// Rules that need an optional capability (Extend, TTL, fencing,
// wait-for-release, Start) are skipped when the store lacks it.
//
// The rules cover acquisition of free and held resources (locks are not
// re-entrant), compare-and-delete release, expiry, independence of
// resources and unusual resource names, contention (exactly one winner per
// round), canceled contexts (never reported as contention or as "not
// held"), extension, TTL queries, strictly increasing fences, waiting for
// release, calls started without waiting (lock.Starter: the same outcomes
// as the blocking methods, one answer per call), and mutual exclusion through both lockers of package lock built
// on the store.
//
// Stores that talk to a server run in real time: rules that wait for expiry
// take a few TTLs each. Stores that live entirely in the process (such as
// package memory) can set Options.Synctest to run every rule on a
// testing/synctest fake clock.
//
// The package depends on the standard library and package lock only.
package conformance
