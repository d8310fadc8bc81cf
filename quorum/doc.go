// Package quorum has the quorums a [lock.MultiLocker] can require: how
// many of its stores must grant a lock before it counts as held.
//
// Only quorums that require more than half of the stores keep mutual
// exclusion (two owners cannot both gather more than half); NewMulti
// refuses the others.
//
// [lock.MultiLocker]: https://pkg.go.dev/github.com/lockkit/lock#MultiLocker
package quorum
