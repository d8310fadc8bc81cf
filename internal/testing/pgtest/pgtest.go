// Package pgtest starts real PostgreSQL servers for tests: initdb in a
// temporary data directory, then postgres on a free loopback port, each a
// [testserver.Process] that a test can kill (SIGKILL) and restart on the
// same data and port, as after a crash.
//
// PostgreSQL refuses to run as root. When the tests run as root (as in CI),
// initdb and postgres run as the unprivileged user that Debian's package
// creates (postgres), or as nobody, through setpriv, which keeps the
// parent-death signal so the server dies with the test binary; the data
// directory belongs to that user. As any other user, they run as that user.
//
// The binaries are looked up in $LOCKKIT_PG_BIN, on the PATH, then in
// /usr/lib/postgresql/*/bin (Debian's layout, newest version first). When
// they are missing, tests skip with a message saying how to install them,
// or fail when [testserver.Required] says servers are required (CI).
//
// The package only runs processes: the tests of the store (a module of its
// own) talk to the server through their driver, and this package's checks
// through psql.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// Install is how to install what the fixtures need.
const Install = "apt-get install -y postgresql (Debian/Ubuntu)"

// BinEnv names the environment variable that may name the directory of
// the PostgreSQL binaries.
const BinEnv = "LOCKKIT_PG_BIN"

// User is the superuser of every server, with trust authentication on
// loopback: connect as it without a password.
const User = "postgres"

// Server is a PostgreSQL server child process and its data directory.
// Kill comes from testserver.Process; Restart starts it again on the same
// data and port, through crash recovery after a Kill. Pause (SIGSTOP)
// stops the postmaster only: sessions already open go on, new connections
// wait.
type Server struct {
	*testserver.Process
	Data string // the data directory
	bin  string
	as   []string // the setpriv command that runs a binary as the server's user, if root
	dir  string   // the temporary directory holding Data, removed by Close
}

// Start starts a server for the test, killed and removed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	s, err := launch(bin)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Launch starts a server that no test owns, for a harness such as bench:
// the caller must Close it. It dies with the process all the same.
func Launch() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL not found (%w); install it: %s", err, Install)
	}
	return launch(bin)
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the server shared by every test of the test binary,
// starting it on first use. Tests sharing it keep apart by database or
// schema. The package's TestMain must call CloseShared after m.Run.
func Shared(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	shared.once.Do(func() { shared.srv, shared.err = launch(bin) })
	if shared.err != nil {
		t.Fatalf("pgtest: shared server: %v", shared.err)
	}
	return shared.srv
}

// CloseShared stops the shared server, if one was started, and removes
// its data.
func CloseShared() {
	if shared.srv != nil {
		shared.srv.Close()
	}
}

// Close kills the server and removes its data directory.
func (s *Server) Close() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// URL returns a connection URL of database on the server, as the
// superuser; "" means the default database, postgres.
func (s *Server) URL(database string) string {
	if database == "" {
		database = "postgres"
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", User, s.Addr(), database)
}

// Restart starts the server again on its data directory and port, killing
// it first if it runs, and returns once it accepts sessions. After a Kill
// the server recovers from its write-ahead log: what was committed
// survives.
func (s *Server) Restart() error {
	s.Kill()
	// The killed postmaster's backends leave when they notice its death,
	// and a new postmaster refuses to start while they hold its shared
	// memory: try again for a while.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Process.Restart()
		if err == nil {
			return s.awaitReady()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Psql runs sql with psql in database ("" for postgres) and returns its
// unaligned, tuples-only output, trimmed.
func (s *Server) Psql(ctx context.Context, database, sql string) (string, error) {
	if database == "" {
		database = "postgres"
	}
	out, err := testserver.Run(ctx, 30*time.Second, filepath.Join(s.bin, "psql"),
		"-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", User, "-d", database, "-c", sql)
	return strings.TrimSpace(out), err
}

// launch initialises a data directory and starts a server on it.
func launch(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Data: filepath.Join(dir, "data"), bin: bin, dir: dir}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for range 3 { // another process may take the port picked
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		path, args := s.command("postgres",
			"-D", s.Data, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1",
			"-c", "unix_socket_directories=",
			"-c", "max_connections=300",
			// Committed transactions survive a killed server (its WAL is
			// written before COMMIT returns), not a killed machine: tests
			// need no fsync.
			"-c", "fsync=off",
			"-c", "full_page_writes=off",
			"-c", "shared_buffers=32MB",
		)
		var p *testserver.Process
		if p, err = testserver.Launch("postgres :"+strconv.Itoa(port), path, args, port, ""); err != nil {
			continue
		}
		s.Process = p
		if err = s.awaitReady(); err != nil {
			s.Kill()
			break
		}
		return s, nil
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// initdb makes the data directory: a superuser named User, trusted on
// loopback, UTF-8 with the C locale.
func (s *Server) initdb() error {
	if err := s.own(s.dir); err != nil {
		return err
	}
	path, args := s.command("initdb", "-D", s.Data, "-U", User, "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if _, err := testserver.Run(context.Background(), time.Minute, path, args...); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

// awaitReady waits until the server accepts sessions: it accepts TCP
// connections a while before, during start-up and recovery.
func (s *Server) awaitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := testserver.Run(context.Background(), 5*time.Second, filepath.Join(s.bin, "pg_isready"),
			"-q", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", User)
		if err == nil {
			return nil
		}
		if !s.Running() {
			return fmt.Errorf("%s exited:\n%s", s.Name, s.Output())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not accept sessions after 30s: %w\n%s", s.Name, err, s.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command returns how to run binary with args as the server's user.
func (s *Server) command(binary string, args ...string) (string, []string) {
	path := filepath.Join(s.bin, binary)
	if os.Geteuid() != 0 {
		return path, args
	}
	return s.as[0], append(append(slices.Clone(s.as[1:]), path), args...)
}

// own makes dir belong to the user the server runs as, when root, and
// sets s.as accordingly.
func (s *Server) own(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := serverUser()
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return fmt.Errorf("running PostgreSQL as %s needs setpriv (util-linux): %w", u.Username, err)
	}
	s.as = []string{setpriv, "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--pdeathsig=SIGKILL", "--"}
	return nil
}

// serverUser is the unprivileged user a root test binary runs the server
// as: postgres if it exists (Debian's package creates it), else nobody.
func serverUser() (*user.User, error) {
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err == nil {
			return u, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no unprivileged user to run PostgreSQL as: %w", errors.Join(errs...))
}

// binDir finds the directory of initdb and postgres, or skips t (fails it
// when servers are required).
func binDir(t testing.TB) string {
	t.Helper()
	dir, err := findBin()
	if err == nil {
		return dir
	}
	msg := fmt.Sprintf("PostgreSQL not found (%v); install it: %s", err, Install)
	if testserver.Required() {
		t.Fatalf("%s; %s or CI is set, so a missing server is a failure", msg, testserver.RequireEnv)
	}
	t.Skip(msg)
	return ""
}

func findBin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres", "pg_isready", "psql"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(BinEnv); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%s=%s has no initdb, postgres, pg_isready and psql", BinEnv, dir)
	}
	if path, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(path)) {
		return filepath.Dir(path), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("no initdb on the PATH nor in /usr/lib/postgresql/*/bin")
}

// version reads the major version in /usr/lib/postgresql/VERSION/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
