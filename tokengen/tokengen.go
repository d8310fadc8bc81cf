// Package tokengen has the owner-token generators of the lockers: Random,
// the default, and Fixed.
//
// A token is the secret that protects Release and Extend: a store frees or
// extends a lock only for the token it was taken with. Tokens must
// therefore be unique across every client of the same stores, or one
// client could release another's lock.
package tokengen

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
)

// Random makes tokens of 128 random bits from crypto/rand, encoded as 22
// URL-safe base64 characters. The zero value is ready to use.
type Random struct{}

// Token returns a new random token.
func (Random) Token() (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Fixed always returns the same token. Use it in tests, or to let a
// process recognise its own locks across restarts; it gives up the
// protection of unique tokens between clients that share it.
type Fixed string

// Token returns f, or an error if f is empty.
func (f Fixed) Token() (string, error) {
	if f == "" {
		return "", errors.New("tokengen: empty Fixed token")
	}
	return string(f), nil
}
