// Package redistest starts real redis-server processes for the tests of
// the Redis store: one server, N independent masters, or a Redis Cluster
// of three masters and three replicas, all on free loopback ports. Each
// server is a [testserver.Process], so tests can kill it (SIGKILL), pause
// and resume it (SIGSTOP/SIGCONT) and restart it on the same port; each
// has an admin client for checks and for faults driven through commands
// (CLIENT PAUSE, DEBUG SLEEP, SCRIPT FLUSH, PEXPIRE, CLUSTER FAILOVER),
// and restarts come empty (Restart, RestartAfter) or with the data
// (RestartPersisted).
//
// Servers run in the foreground without persistence (--save "",
// --appendonly no), each in a directory of its own, and die with the test
// that started them (or, for [SharedCluster], with the test binary).
//
// When redis-server is missing, tests skip with a message saying how to
// install it, or fail when [testserver.Required] says servers are required
// (CI). There is no Docker fallback.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// Install is how to install what the fixtures need.
const Install = "apt-get install -y redis-server redis-tools (Debian/Ubuntu)"

// Server is a redis-server child process with an admin client.
type Server struct {
	*testserver.Process
	admin rueidis.Client
}

// Start starts one redis-server for the test; it is killed when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	path := testserver.LookPath(t, "redis-server", Install)
	s, err := launch(path, t.TempDir())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartN starts n independent redis-server masters for the test.
func StartN(t testing.TB, n int) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t)
	}
	return servers
}

// launch starts a server in dir, with extra arguments, on a free port; it
// tries a few ports in case another process takes the one it picked (the
// server then fails to start, or the admin client reaches the other
// process).
func launch(path, dir string, extra ...string) (*Server, error) {
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			return nil, err
		}
		args := append([]string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--enable-debug-command", "local",
			"--repl-diskless-sync-delay", "0", // replicas sync at once
		}, extra...)
		var p *testserver.Process
		p, err = testserver.Launch("redis-server :"+strconv.Itoa(port), path, args, port, dir)
		if err != nil {
			continue
		}
		s := &Server{Process: p}
		s.admin, err = newClient(rueidis.ClientOption{
			InitAddress:       []string{p.Addr()},
			ForceSingleClient: true,
			PipelineMultiplex: -1, // one connection: Restart repairs it with one PING
			// Always in pipelining mode, so its connection always has the
			// same goroutines: a leak check sees none appear when a
			// reconnection after a restart changes the mode.
			AlwaysPipelining: true,
		})
		if err != nil {
			// Another process may have taken the port between freePort
			// and the server's bind: the readiness check then reached
			// that process, and our server exited. Try another port.
			p.Kill()
			err = fmt.Errorf("admin client for %s: %w", p.Name, err)
			continue
		}
		return s, nil
	}
	return nil, err
}

// Close closes the admin client and kills the server.
func (s *Server) Close() {
	s.admin.Close()
	s.Kill()
}

// Restart kills the server if it runs and starts it again on the same
// port, empty (there is no persistence, and any snapshot a SAVE left is
// removed first), and waits until the admin client has reconnected. See
// RestartPersisted for a restart that keeps the data.
func (s *Server) Restart() error {
	s.Process.Kill()
	if err := s.removeSnapshot(); err != nil {
		return err
	}
	return s.start()
}

// start starts the stopped server again on its port and waits until the
// admin client has reconnected.
func (s *Server) start() error {
	if err := s.Process.Restart(); err != nil {
		return err
	}
	return poll(10*time.Second, func() error {
		if s.Answers(time.Second) {
			return nil
		}
		return fmt.Errorf("%s does not answer PING after a restart: %w", s.Name, errNotYet)
	})
}

// Admin returns a client for checks and admin commands, connected to this
// server alone (not following cluster redirects). It reconnects by itself
// after a Restart.
func (s *Server) Admin() rueidis.Client { return s.admin }

// NewClient returns a new client of this server for the code under test,
// closed when t ends. opts may adjust the client's options.
func (s *Server) NewClient(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return clientFor(t, []string{s.Addr()}, opts)
}

// Do runs an admin command, bounded by a few seconds.
func (s *Server) Do(cmd ...string) rueidis.RedisResult { return s.doFor(0, cmd...) }

// doFor runs an admin command expected to take about d, bounded by d and
// a few seconds.
func (s *Server) doFor(d time.Duration, cmd ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	defer cancel()
	return s.admin.Do(ctx, s.admin.B().Arbitrary(cmd...).Build())
}

// Answers reports whether the server answers PING within timeout.
func (s *Server) Answers(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.admin.Do(ctx, s.admin.B().Ping().Build()).Error() == nil
}

func clientFor(t testing.TB, addrs []string, opts []func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: addrs}
	for _, f := range opts {
		f(&o)
	}
	c, err := newClient(o)
	if err != nil {
		t.Fatalf("redistest: client of %v: %v", addrs, err)
	}
	t.Cleanup(c.Close)
	return c
}

// newClient makes a client with bounded dialing, so a dead server fails
// fast instead of hanging a test.
func newClient(o rueidis.ClientOption) (rueidis.Client, error) {
	if o.Dialer.Timeout == 0 {
		o.Dialer.Timeout = 2 * time.Second
	}
	if o.ConnWriteTimeout == 0 {
		o.ConnWriteTimeout = 5 * time.Second
	}
	return rueidis.NewClient(o)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lookPath finds a binary without a test, for the shared fixtures.
func lookPath(binary string) (string, error) {
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("%s not found (%w); install it: %s", binary, err, Install)
	}
	return path, nil
}

// poll calls cond every 20ms until it returns nil or within has passed,
// and returns cond's last error.
func poll(within time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holds checks cond every 20ms for d, and returns its first error.
func holds(d time.Duration, cond func() error) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

var errNotYet = errors.New("not yet")
