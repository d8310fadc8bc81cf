// Package sloghook logs what a locker does with log/slog.
//
//	locker, err := lock.NewSingle(store, &lock.Options{Hook: sloghook.New(slog.Default())})
//
// Levels say how much attention an event deserves:
//   - Error: a lock lost while its holder ran (lock.EventLost).
//   - Warn: a store failure (a store call that failed for another reason
//     than the lock's state or the end of the call's context: a store's
//     error that wraps context.DeadlineExceeded while the caller's context
//     is alive, a client's own timeout, is a failure), a release or
//     extension that failed, a Lock that failed because the stores were
//     unavailable.
//   - Info: a Lock or TryLock that failed otherwise: on contention,
//     because its context ended, on input a store refused, or because the
//     locker was shut down.
//   - Debug: everything else — attempts, store calls (including one ended
//     by the end of the caller's context), quorum decisions, retries,
//     acquisitions, successful extensions and releases.
//
// [LevelContext] returns the level of an event observed in a context;
// [Level], which has no context, takes a store's error that wraps a
// context error for the end of the call's context.
//
// Records carry the operation, the resource and, as they apply, the store
// (its name and, as store_index, its position among the locker's stores,
// which tells apart the stores of a MultiLocker that share a name), the
// duration, the attempt, the votes and the error. Tokens are never
// logged: they are the holders' secrets.
package sloghook
