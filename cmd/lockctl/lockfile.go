package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lockkit/lock"
)

// A lock file holds one lock.Lock as JSON, as acquire writes it and
// extend and release --lock read it, with the stores the lock was taken
// on: {"resource": ..., "token": ..., "validUntil": ..., "fence": ...,
// "stores": [...]}. The stores (see storeRecord) let extend and release
// refuse, before sending anything, a lock file given with other stores
// than acquire's: on another server they would find the lock not held and
// remove the file of a lock still held, and on a minority of a Redlock's
// stores release would remove the file while a quorum still holds the
// lock. A file without "stores" (a lock.Lock that a Go program wrote, or
// an older lockctl's) is taken with whatever stores are given; lock.Lock
// ignores the extra key, so a Go program reads lockctl's files as they
// are. The token is the owner's secret (it releases the lock), so lockctl
// writes lock files readable by their owner only (0600), never puts the
// token on a command line, and warns when a lock file it reads is open to
// others. "-" stands for stdout or stdin.

// lockFile is the content of a lock file.
type lockFile struct {
	lock.Lock
	// Stores are the stores the lock was taken on, in the order given to
	// acquire; nil when the file does not say.
	Stores []storeRecord `json:"stores,omitempty"`
	// ReleasedOnQuorum says that a release --lock released the lock on a
	// quorum of a Redlock's stores, and kept the file because a store did
	// not confirm: another release then expects the others to answer
	// that they hold nothing.
	ReleasedOnQuorum bool `json:"releasedOnQuorum,omitempty"`
}

// storeRecord says where a store keeps its locks, as a lock file records
// it: its kind, servers and the part of them its keys live in, and
// nothing secret (no user name, password or TLS setting). Two records are
// one store when they agree on everything but the servers and share a
// server, spelt as serverIDs spells them (so localhost is 127.0.0.1): a
// cluster's seeds or members may be given differently.
type storeRecord struct {
	Kind     string   `json:"kind"`               // redis, redis+cluster, redis+sentinel, unix (Redis), memcache, etcd, postgres
	Servers  []string `json:"servers"`            // HOST:PORT, or a unix socket's path; the Sentinels for redis+sentinel
	Master   string   `json:"master,omitempty"`   // redis+sentinel: the master's name
	DB       int      `json:"db,omitempty"`       // redis: the database number
	Database string   `json:"database,omitempty"` // postgres: the database
	Prefix   string   `json:"prefix,omitempty"`   // redis, memcache, etcd: the key prefix
	Table    string   `json:"table,omitempty"`    // postgres: the table, SCHEMA.TABLE when the URL names a schema
}

// sameStore reports whether r and o are one store.
func (r storeRecord) sameStore(o storeRecord) bool {
	if r.Kind != o.Kind || r.Master != o.Master || r.DB != o.DB || r.Database != o.Database || r.Prefix != o.Prefix || r.Table != o.Table {
		return false
	}
	theirs := serverIDs(o.Kind, o.Servers...)
	for _, id := range serverIDs(r.Kind, r.Servers...) {
		if slices.Contains(theirs, id) {
			return true
		}
	}
	return false
}

// String describes r in messages, in the form of a store URL.
func (r storeRecord) String() string {
	var b strings.Builder
	b.WriteString(r.Kind + "://" + strings.Join(r.Servers, ","))
	var params []string
	switch r.Kind {
	case "redis", "redis+cluster":
		fmt.Fprintf(&b, "/%d", r.DB)
	case "redis+sentinel":
		fmt.Fprintf(&b, "/%s/%d", r.Master, r.DB)
	case "unix":
		params = append(params, fmt.Sprintf("db=%d", r.DB))
	case "postgres":
		b.WriteString("/" + r.Database)
	}
	for _, p := range [][2]string{{"prefix", r.Prefix}, {"table", r.Table}} {
		if p[1] != "" {
			params = append(params, p[0]+"="+p[1])
		}
	}
	if len(params) > 0 {
		b.WriteString("?" + strings.Join(params, "&"))
	}
	return b.String()
}

// checkStores refuses specs unless they are the stores recorded in lf (in
// any order), or lf records none.
func checkStores(path string, lf lockFile, specs []*storeSpec) error {
	if len(lf.Stores) == 0 {
		return nil
	}
	used := make([]bool, len(lf.Stores))
	same := len(specs) == len(lf.Stores)
	for _, spec := range specs {
		found := false
		for i, r := range lf.Stores {
			if !used[i] && r.sameStore(spec.record) {
				used[i], found = true, true
				break
			}
		}
		same = same && found
	}
	if same {
		return nil
	}
	recorded := make([]string, len(lf.Stores))
	for i, r := range lf.Stores {
		recorded[i] = r.String()
	}
	given := make([]string, len(specs))
	for i, spec := range specs {
		given[i] = spec.display
	}
	return usagef("the lock on %q in %s was taken on %s, not on the stores given (%s): give the stores it was acquired on", lf.Resource, lockFileName(path), strings.Join(recorded, " "), strings.Join(given, " "))
}

// recordStores returns the records of specs, for a lock file.
func recordStores(specs []*storeSpec) []storeRecord {
	records := make([]storeRecord, len(specs))
	for i, spec := range specs {
		records[i] = spec.record
	}
	return records
}

// records returns the records of the stores of s, for a lock file: a
// cluster's record names, after the seeds its URL gave, the other
// servers the store found in the cluster (one store of a Redlock that
// was down, or a cluster that cannot list them, records its seeds alone).
func (s *storeSet) records(ctx context.Context) []storeRecord {
	records := recordStores(s.specs)
	for i, o := range s.stores {
		if i >= len(records) || s.down[i] != nil || o.members == nil {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		members, err := o.members(mctx)
		cancel()
		if err != nil {
			continue
		}
		r := &records[i]
		r.Servers = slices.Clone(r.Servers)
		known := serverIDs(r.Kind, r.Servers...)
		for j, id := range serverIDs(r.Kind, members...) {
			if !slices.Contains(known, id) {
				known = append(known, id)
				r.Servers = append(r.Servers, members[j])
			}
		}
	}
	return records
}

// stdio is the name of stdin or stdout as a lock file.
const stdio = "-"

// reserveLockFile creates path, empty and readable by its owner only, so
// that acquire fails before taking a lock it could not record. An
// existing file is an error: it may hold a lock still held.
func reserveLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil, usagef("--lock %s is a directory: want the path of a file to create", path)
		}
		return nil, fmt.Errorf("%s exists: it may hold a lock still held; release it (lockctl release --lock %s) or remove it", path, path)
	}
	return f, err
}

// encodeLock returns lf as one line of JSON.
func encodeLock(lf lockFile) []byte {
	data, _ := json.Marshal(lf) // a lockFile always marshals
	return append(data, '\n')
}

// readLockFile reads the lock in path, or on stdin for "-".
func (a *app) readLockFile(path string) (lockFile, error) {
	var data []byte
	var err error
	if path == stdio {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
		if err != nil {
			// A lock file that cannot be read is a bad --lock, not a
			// store's failure: nothing was sent.
			return lockFile{}, usagef("--lock %s: %w", path, err)
		}
		a.warnIfOpen(path)
	}
	if err != nil {
		return lockFile{}, err
	}
	var lf lockFile
	if err := json.Unmarshal(data, &lf); err != nil || lf.Resource == "" || lf.Token == "" {
		return lockFile{}, usagef("%s does not hold a lock as lockctl acquire writes it (JSON with a resource and a token)", lockFileName(path))
	}
	return lf, nil
}

// warnIfOpen warns when others than its owner may read a lock file.
func (a *app) warnIfOpen(path string) {
	fi, err := os.Stat(path)
	if err != nil || runtime.GOOS == "windows" || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "lockctl: warning: %s is open to others (mode %v): its token lets anyone who reads it release the lock; chmod 600 %s\n", path, fi.Mode().Perm(), path)
}

// checkLockFileDir makes sure that writeLockFile can create its file in
// the directory of path, by creating one and removing it: extend checks
// before it extends the lock, so that a directory it cannot write fails
// the command with the lock as FILE records it, not extended and FILE
// stale. (Keeping the file for writeLockFile would leave it behind when
// a signal ends lockctl during the Extend.) Nothing to check for "-".
func checkLockFileDir(path string) error {
	if path == stdio {
		return nil
	}
	tmp, err := createTempFor(path)
	if err != nil {
		return fmt.Errorf("preparing to record the lock in %s: %w", path, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// createTempFor creates a file, readable by its owner only, in the
// directory of path, named after it.
func createTempFor(path string) (*os.File, error) {
	base := filepath.Base(path)
	if len(base) > maxTempBase {
		base = base[:maxTempBase] // the random suffix must fit in a name
	}
	return os.CreateTemp(filepath.Dir(path), "."+base+".*") // mode 0600
}

// maxTempBase is the longest part of a lock file's name that createTempFor
// repeats: a dot, it, a dot and CreateTemp's random number (up to 10
// digits) fit in the 255 bytes of a name.
const maxTempBase = 200

// writeLockFile records lf, extended, in path, atomically and readable by
// its owner only, or prints it on stdout for "-". It does not recreate a
// file that release --lock removed meanwhile, nor replace one that holds
// another lock: the lock it recorded is then gone, and it says so as
// extend does of a lock no longer held.
func (a *app) writeLockFile(path string, lf lockFile) error {
	if path == stdio {
		_, err := a.stdout.Write(encodeLock(lf))
		return err
	}
	held, err := lockFileHeld(path, lf, func() error {
		tmp, err := createTempFor(path)
		if err != nil {
			return err
		}
		_, err = tmp.Write(encodeLock(lf))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
		return err
	})
	if err == nil && !held {
		err = exitWith(exitLost, fmt.Errorf("the lock on %q was released meanwhile (%s was removed, or holds another lock): not recorded again", lf.Resource, path))
	}
	return err
}

// removeLockFile removes a lock file once its lock is gone, unless it
// holds another lock by now.
func (a *app) removeLockFile(path string, lf lockFile) {
	if path == stdio {
		return
	}
	if _, err := lockFileHeld(path, lf, func() error { return os.Remove(path) }); err != nil {
		fmt.Fprintf(a.stderr, "lockctl: warning: %v\n", err)
	}
}

// lockFileHeld calls f, which replaces or removes the lock file at path,
// if that file still holds the lock of lf (its resource and token), and
// reports whether it did.
//
// extend and release --lock read the file, ask the stores, then replace
// (extend, by renaming a new file over it) or remove (release) the file.
// Run at once, an extend's rename could recreate the file of a lock that a
// release released and removed meanwhile. So both take an exclusive
// flock(2) of the file before they change it, and check, holding it, that
// the path still names the file they locked (another extend may have
// renamed a new one over it: they lock that one instead) and that it holds
// their lock: a file removed is left removed. The flock is held for these
// few file operations only, never while the stores are asked.
func lockFileHeld(path string, lf lockFile, f func() error) (bool, error) {
	for {
		file, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		held, again, err := func() (bool, bool, error) {
			defer file.Close() // frees the flock
			if err := lockExclusive(file); err != nil {
				return false, false, fmt.Errorf("locking %s: %w", path, err)
			}
			locked, err := file.Stat()
			if err != nil {
				return false, false, err
			}
			now, err := os.Stat(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return false, false, nil
			case err != nil:
				return false, false, err
			case !os.SameFile(locked, now):
				return false, true, nil
			}
			data, err := io.ReadAll(file)
			if err != nil {
				return false, false, err
			}
			var cur lockFile
			if json.Unmarshal(data, &cur) != nil || cur.Resource != lf.Resource || cur.Token != lf.Token {
				return false, false, nil
			}
			return true, false, f()
		}()
		if !again {
			return held, err
		}
	}
}

// lockFileName names a lock file in messages.
func lockFileName(path string) string {
	if path == stdio {
		return "stdin"
	}
	return path
}
