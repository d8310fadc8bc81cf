//go:build unix

package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockkit/lock"
)

// Store keeps locks in files under a directory.
type Store struct {
	dir string
}

var (
	_ lock.Store     = (*Store)(nil)
	_ lock.Extender  = (*Store)(nil)
	_ lock.TTLReader = (*Store)(nil)
	_ lock.Fencer    = (*Store)(nil)
)

// New returns a store over dir, creating it (with mode 0700) if needed. A
// relative dir is resolved against the working directory when New is
// called, so that a later change of directory does not move the locks. An
// empty dir is refused with an error wrapping lock.ErrInvalid.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("filestore: %w: empty directory name", lock.ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Store{dir: abs}, nil
}

// String names the store in lockers' errors.
func (s *Store) String() string { return "filestore " + s.dir }

// state is the content of a resource's file.
type state struct {
	fence   uint64
	expires int64 // Unix nanoseconds
	token   string
}

func (st state) heldAt(now time.Time) bool { return st.token != "" && now.UnixNano() < st.expires }

// with runs f on the state of resource while holding the file's flock, and
// writes the state back if f returns true. Unless create is set, a resource
// without a file is free: f runs on the zero state, and no file is created
// (only an acquisition makes one).
func (s *Store) with(ctx context.Context, resource string, create bool, f func(st *state, now time.Time) bool) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", lock.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err // nothing was done
	}
	if resource == "" {
		return fmt.Errorf("%w: empty resource name", lock.ErrInvalid)
	}
	sum := sha256.Sum256([]byte(resource))
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	file, err := os.OpenFile(filepath.Join(s.dir, hex.EncodeToString(sum[:])+".lock"), flags, 0o600)
	if !create && errors.Is(err, fs.ErrNotExist) {
		// Never locked: free. Files are never deleted, so it stays free
		// until an acquisition creates the file.
		var st state
		f(&st, time.Now())
		return nil
	}
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("filestore: flock: %w", err)
	}
	defer syscall.Flock(int(file.Fd()), syscall.LOCK_UN)

	data, err := io.ReadAll(file)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	st, err := parse(string(data))
	if err != nil {
		return fmt.Errorf("filestore: %s: %w", file.Name(), err)
	}
	if !f(&st, time.Now()) {
		return nil
	}
	line := strconv.FormatUint(st.fence, 10) + " " + strconv.FormatInt(st.expires, 10) + " " + st.token
	if _, err := file.WriteAt([]byte(line), 0); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	if err := file.Truncate(int64(len(line))); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

func parse(data string) (state, error) {
	if data == "" {
		return state{}, nil
	}
	parts := strings.SplitN(data, " ", 3)
	if len(parts) != 3 {
		return state{}, fmt.Errorf("malformed lock file %q", data)
	}
	fence, err1 := strconv.ParseUint(parts[0], 10, 64)
	expires, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return state{}, fmt.Errorf("malformed lock file %q", data)
	}
	return state{fence: fence, expires: expires, token: parts[2]}, nil
}

func checkToken(token string) error {
	if token == "" || strings.ContainsAny(token, "\n") {
		return fmt.Errorf("%w: token must be non-empty and on one line", lock.ErrInvalid)
	}
	return nil
}

// checkTTL refuses a ttl that is not positive, or whose expiry a lock file
// cannot hold (Unix nanoseconds in an int64, up to the year 2262): it would
// wrap around to a past expiry, a lock free at once.
func checkTTL(ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return fmt.Errorf("%w: ttl is %v: want > 0", lock.ErrInvalid, ttl)
	case ttl > time.Duration(math.MaxInt64-time.Now().UnixNano()):
		return fmt.Errorf("%w: ttl is %v: its expiry is past what a lock file holds", lock.ErrInvalid, ttl)
	}
	return nil
}

// expiry returns the expiry, in Unix nanoseconds, of a lock given ttl at
// now. checkTTL read the clock before now: a ttl it let through that now
// takes past what a lock file holds is held to that limit rather than
// wrap around.
func expiry(now time.Time, ttl time.Duration) int64 {
	if ttl > time.Duration(math.MaxInt64-now.UnixNano()) {
		return math.MaxInt64
	}
	return now.Add(ttl).UnixNano()
}

// Acquire implements lock.Store.
func (s *Store) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	_, err := s.AcquireFenced(ctx, resource, token, ttl)
	return err
}

// AcquireFenced implements lock.Fencer.
func (s *Store) AcquireFenced(ctx context.Context, resource, token string, ttl time.Duration) (uint64, error) {
	if err := checkTTL(ttl); err != nil {
		return 0, err
	}
	if err := checkToken(token); err != nil {
		return 0, err
	}
	var fence uint64
	held := false
	err := s.with(ctx, resource, true, func(st *state, now time.Time) bool {
		if st.heldAt(now) {
			held = true
			return false
		}
		st.fence++
		st.expires = expiry(now, ttl)
		st.token = token
		fence = st.fence
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case held:
		return 0, lock.ErrNotAcquired
	}
	return fence, nil
}

// Release implements lock.Store.
func (s *Store) Release(ctx context.Context, resource, token string) error {
	if err := checkToken(token); err != nil {
		return err
	}
	return s.ifHeld(ctx, resource, token, func(st *state, _ time.Time) { st.token = "" })
}

// Extend implements lock.Extender.
func (s *Store) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := checkToken(token); err != nil {
		return err
	}
	return s.ifHeld(ctx, resource, token, func(st *state, now time.Time) { st.expires = expiry(now, ttl) })
}

// ifHeld applies change if resource is held under token, and returns
// lock.ErrNotHeld otherwise.
func (s *Store) ifHeld(ctx context.Context, resource, token string, change func(*state, time.Time)) error {
	ours := false
	err := s.with(ctx, resource, false, func(st *state, now time.Time) bool {
		ours = st.heldAt(now) && st.token == token
		if ours {
			change(st, now)
		}
		return ours
	})
	if err == nil && !ours {
		return lock.ErrNotHeld
	}
	return err
}

// Exists implements lock.Store.
func (s *Store) Exists(ctx context.Context, resource string) (bool, error) {
	_, held, err := s.TTL(ctx, resource)
	return held, err
}

// TTL implements lock.TTLReader.
func (s *Store) TTL(ctx context.Context, resource string) (time.Duration, bool, error) {
	var remaining time.Duration
	var held bool
	err := s.with(ctx, resource, false, func(st *state, now time.Time) bool {
		held = st.heldAt(now)
		remaining = time.Duration(st.expires - now.UnixNano())
		return false
	})
	if err != nil || !held {
		return 0, false, err
	}
	return remaining, true, nil
}
