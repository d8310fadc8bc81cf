package redistest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The fault verbs below act through Redis itself (admin commands) or on
// the server's process and data directory. Process-level faults — Kill,
// Pause, Resume — come from testserver.Process.

// ClientPause suspends the server's clients for d with CLIENT PAUSE: with
// writesOnly, only commands that may write (a lock acquisition, release or
// extension) are held, and reads still answer; otherwise every command is
// held. The server keeps its connections, and answers the held commands
// when the pause ends (after d, or at ClientUnpause). Unlike Pause
// (SIGSTOP), the server stays alive: replication, cluster gossip and
// expiry go on.
func (s *Server) ClientPause(d time.Duration, writesOnly bool) error {
	mode := "ALL"
	if writesOnly {
		mode = "WRITE"
	}
	if err := s.Do("CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), mode).Error(); err != nil {
		return fmt.Errorf("%s: CLIENT PAUSE: %w", s.Name, err)
	}
	return nil
}

// ClientUnpause ends a ClientPause early.
func (s *Server) ClientUnpause() error {
	if err := s.Do("CLIENT", "UNPAUSE").Error(); err != nil {
		return fmt.Errorf("%s: CLIENT UNPAUSE: %w", s.Name, err)
	}
	return nil
}

// DebugSleep blocks the whole server for d with DEBUG SLEEP — no command,
// replication, gossip or expiry is processed meanwhile, as in a long
// stall of its main thread — and returns when the server answers again.
// Call it in a goroutine to do something during the stall; the admin
// client is busy until it returns.
func (s *Server) DebugSleep(d time.Duration) error {
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	if err := s.doFor(d, "DEBUG", "SLEEP", secs).Error(); err != nil {
		return fmt.Errorf("%s: DEBUG SLEEP %s: %w", s.Name, secs, err)
	}
	return nil
}

// ScriptFlush removes every cached Lua script (SCRIPT FLUSH), as a
// restart or a failover to a fresh replica would: clients running scripts
// by SHA-1 get NOSCRIPT until they send the script again.
func (s *Server) ScriptFlush() error {
	if err := s.Do("SCRIPT", "FLUSH").Error(); err != nil {
		return fmt.Errorf("%s: SCRIPT FLUSH: %w", s.Name, err)
	}
	return nil
}

// PExpire sets the time to live of key to d (PEXPIRE), and reports whether
// the key existed. With a tiny d it makes a held lock expire at once
// behind its holder's back, as an eviction or a clock jump on the server
// would.
func (s *Server) PExpire(key string, d time.Duration) (bool, error) {
	n, err := s.Do("PEXPIRE", key, strconv.FormatInt(max(d.Milliseconds(), 1), 10)).AsInt64()
	if err != nil {
		return false, fmt.Errorf("%s: PEXPIRE %q: %w", s.Name, key, err)
	}
	return n == 1, nil
}

// rdbFile is the snapshot file a server loads at start, in its directory.
const rdbFile = "dump.rdb"

// RestartAfter kills the server, waits delay, and starts it again, empty,
// on the same port: a delayed restart, the operational remedy for servers
// without persistence (a server that stays down for longer than any lock's
// TTL cannot forget a lock that is still valid elsewhere).
func (s *Server) RestartAfter(delay time.Duration) error {
	s.Kill()
	time.Sleep(delay)
	return s.Restart()
}

// RestartPersisted restarts the server with its data: it snapshots the
// dataset (SAVE) while the server runs, kills it, and starts it again on
// the same port, loading the snapshot — as a server with persistence that
// loses no write would come back. Keys come back with their absolute
// expiry times, so locks that expired meanwhile stay expired.
func (s *Server) RestartPersisted() error {
	if err := s.Do("SAVE").Error(); err != nil {
		return fmt.Errorf("%s: SAVE: %w", s.Name, err)
	}
	s.Process.Kill()
	if err := s.start(); err != nil {
		return err
	}
	// The snapshot was loaded: remove it, so that a later Restart is empty.
	return s.removeSnapshot()
}

// removeSnapshot deletes the server's snapshot file, if any.
func (s *Server) removeSnapshot() error {
	if s.Dir == "" {
		return nil
	}
	err := os.Remove(filepath.Join(s.Dir, rdbFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: removing the snapshot: %w", s.Name, err)
	}
	return nil
}

// DBSize returns the number of keys on the server (DBSIZE).
func (s *Server) DBSize() (int64, error) {
	n, err := s.Do("DBSIZE").AsInt64()
	if err != nil {
		return 0, fmt.Errorf("%s: DBSIZE: %w", s.Name, err)
	}
	return n, nil
}
