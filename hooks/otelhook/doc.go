// Package otelhook reports what a locker does to OpenTelemetry: a span per
// Lock, TryLock, Unlock and Extend call with a child span per store call,
// and metrics.
//
//	h, err := otelhook.New(nil, nil) // the global tracer and meter providers
//	locker, err := lock.NewSingle(store, &lock.Options{Hook: h})
//
// It lives in its own module so that the lock library does not depend on
// OpenTelemetry.
//
// # Metrics
//
//   - lock.acquire.duration (histogram, seconds): time Lock and TryLock
//     took, by lock.op and lock.outcome (ok, contention, canceled,
//     unavailable, invalid, error).
//   - lock.contention (counter): acquisition attempts that found the
//     resource held by another owner, each once, including one during
//     which the caller's context ended (its call reports canceled).
//   - lock.lost (counter): locks lost while Run held them.
//   - lock.held (asynchronous up-down counter): locks held, as far as the
//     hook can tell: acquired, and not yet released, lost or past their
//     validity. A lock counts once, however often it is released. Hooks
//     on one meter provider add up; Hook.Close withdraws a hook's count
//     (and lets the provider drop the hook).
//   - lock.store.duration (histogram, seconds): store calls, by lock.store,
//     lock.store.op and lock.outcome. A store call's outcome is canceled
//     only when the caller's context ended: a store's error that wraps
//     context.DeadlineExceeded while that context is alive (a client's
//     own timeout, say) is a failure.
//   - lock.store.errors (counter): store calls that failed (outcome
//     unavailable, invalid or error), by lock.store and lock.store.op.
//
// Resource names are span attributes only: as metric attributes they
// would make unbounded cardinality.
package otelhook
