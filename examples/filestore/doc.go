// Package filestore is a worked example of a third-party lock store: locks
// kept in files of a directory, guarded by flock(2), so that processes on
// one machine (or sharing a filesystem with working flock) can lock
// resources. It implements lock.Store, lock.Extender, lock.TTLReader and
// lock.Fencer, and passes the conformance suite (see filestore_test.go).
//
// docs/stores.md walks through it. It is an example first: it takes
// flock(2) on every call (but those that find no file: a resource never
// locked is free), cannot be interrupted by a context while waiting for
// that flock, and never deletes the files it creates (one small file per
// resource ever locked; calls that take no lock create none).
// Expiries are read from each process's wall clock, so processes sharing
// a directory over a network filesystem need clocks that agree (to within
// the lockers' drift allowance), and a clock stepped forward frees locks
// early. A process that dies while it writes a lock file may leave the
// resource taken, by nobody, until its TTL runs out; the files are not
// written to survive a crash of the machine.
//
// [New] creates the directory with mode 0700 and the store creates each
// lock file with mode 0600 (both less the umask), so processes that share
// a directory must run as one user: another user's process cannot open
// the files, and its calls fail. A relative directory is resolved when
// New is called.
//
// # File format
//
// Each resource has a file named after the SHA-256 of its name, so every
// resource name maps to a valid, distinct file name. The file holds one
// line: "<fence> <expiry, Unix nanoseconds> <token>" — a free resource has
// an expiry in the past or an empty token. The fence counter lives in the
// same file and is never reset, so fences increase strictly for as long as
// the directory lives.
package filestore
