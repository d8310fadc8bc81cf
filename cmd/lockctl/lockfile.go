package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/lockkit/lock"
)

// A lock file holds one lock.Lock as JSON, as acquire writes it and
// extend and release --lock read it: {"resource": ..., "token": ...,
// "validUntil": ..., "fence": ...}. The token is the owner's secret (it
// releases the lock), so lockctl writes lock files readable by their owner
// only (0600), never puts the token on a command line, and warns when a
// lock file it reads is open to others. "-" stands for stdout or stdin.

// stdio is the name of stdin or stdout as a lock file.
const stdio = "-"

// reserveLockFile creates path, empty and readable by its owner only, so
// that acquire fails before taking a lock it could not record. An
// existing file is an error: it may hold a lock still held.
func reserveLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s exists: it may hold a lock still held; release it (lockctl release --lock %s) or remove it", path, path)
	}
	return f, err
}

// encodeLock returns l as one line of JSON.
func encodeLock(l lock.Lock) []byte {
	data, _ := json.Marshal(l) // a Lock always marshals
	return append(data, '\n')
}

// readLockFile reads the lock in path, or on stdin for "-".
func (a *app) readLockFile(path string) (lock.Lock, error) {
	var data []byte
	var err error
	if path == stdio {
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
		if err != nil {
			// A lock file that cannot be read is a bad --lock, not a
			// store's failure: nothing was sent.
			return lock.Lock{}, usagef("--lock %s: %w", path, err)
		}
		a.warnIfOpen(path)
	}
	if err != nil {
		return lock.Lock{}, err
	}
	var l lock.Lock
	if err := json.Unmarshal(data, &l); err != nil || l.Resource == "" || l.Token == "" {
		return lock.Lock{}, usagef("%s does not hold a lock as lockctl acquire writes it (JSON with a resource and a token)", lockFileName(path))
	}
	return l, nil
}

// warnIfOpen warns when others than its owner may read a lock file.
func (a *app) warnIfOpen(path string) {
	fi, err := os.Stat(path)
	if err != nil || runtime.GOOS == "windows" || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "lockctl: warning: %s is open to others (mode %v): its token lets anyone who reads it release the lock; chmod 600 %s\n", path, fi.Mode().Perm(), path)
}

// writeLockFile replaces the lock in path, atomically and readable by its
// owner only, or prints it on stdout for "-".
func (a *app) writeLockFile(path string, l lock.Lock) error {
	if path == stdio {
		_, err := a.stdout.Write(encodeLock(l))
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return err
	}
	_, err = tmp.Write(encodeLock(l))
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
}

// removeLockFile removes a lock file once its lock is gone.
func (a *app) removeLockFile(path string) {
	if path == stdio {
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(a.stderr, "lockctl: warning: %v\n", err)
	}
}

// lockFileName names a lock file in messages.
func lockFileName(path string) string {
	if path == stdio {
		return "stdin"
	}
	return path
}
