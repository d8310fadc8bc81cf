// Package tokengen has the owner-token generators of the lockers: Random,
// the default; Suffixed, Random tokens followed by a suffix (a locker
// with a holder name makes its tokens so); and Fixed, for tests.
//
// A token is the secret that protects Release and Extend: a store frees or
// extends a lock only for the token it was taken with. Tokens must
// therefore be unique across every client of the same stores, or one
// client could release another's lock.
package tokengen
