// Package shard picks the shard of a string key, for the sharded maps of
// the lockers and of the memory store: cheaply, and the same in every
// process, so that memory stores place a resource in the same shard.
//
// The hash reads the key's length and at most its first and last eight
// bytes: keys that differ only in between share a shard. That costs only
// contention, never correctness; it is not a hash for a hash table.
package shard

import "math/bits"

// Of returns the shard of key among n, a power of two.
func Of(key string, n int) int {
	l := len(key)
	x := uint64(l) * 0x9e3779b97f4a7c15
	switch {
	case l >= 8:
		x ^= le64(key) ^ bits.RotateLeft64(le64(key[l-8:]), 31)
	case l >= 4:
		x ^= uint64(le32(key)) | uint64(le32(key[l-4:]))<<32
	case l > 0:
		x ^= uint64(key[0]) | uint64(key[l/2])<<8 | uint64(key[l-1])<<16
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return int(x & uint64(n-1))
}

func le64(s string) uint64 { return uint64(le32(s)) | uint64(le32(s[4:]))<<32 }

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
