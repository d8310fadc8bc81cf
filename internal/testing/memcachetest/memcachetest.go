// Package memcachetest starts real memcached processes for tests, on free
// loopback ports, built on package testserver: a test gets a server it can
// kill, pause, resume and restart, and gomemcache clients connected to it.
//
// A missing memcached binary skips the test, or fails it when
// LOCKKIT_REQUIRE_SERVERS is set (see testserver.RequireEnv).
package memcachetest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// Install says how to install the server binary.
const Install = "apt-get install -y memcached"

// Options configures a server. The zero value starts memcached with its
// defaults (64 MB, evicting).
type Options struct {
	// MemoryMB is the item memory limit in megabytes (-m); zero keeps
	// memcached's default of 64.
	MemoryMB int
	// NoEvict makes a full server refuse new items instead of evicting
	// old ones (-M).
	NoEvict bool
	// MaxItemSize is the largest item in bytes (-I); zero keeps the
	// default of 1 MB.
	MaxItemSize int
	// Threads is the number of worker threads (-t); zero keeps the
	// default of 4.
	Threads int
	// Args are extra command-line arguments.
	Args []string
}

// args returns the command line for a server on port.
func (o *Options) args(port int) []string {
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses to run as root otherwise
	}
	if o == nil {
		return args
	}
	if o.MemoryMB > 0 {
		args = append(args, "-m", strconv.Itoa(o.MemoryMB))
	}
	if o.NoEvict {
		args = append(args, "-M")
	}
	if o.MaxItemSize > 0 {
		args = append(args, "-I", strconv.Itoa(o.MaxItemSize))
	}
	if o.Threads > 0 {
		args = append(args, "-t", strconv.Itoa(o.Threads))
	}
	return append(args, o.Args...)
}

// Server is a running memcached. Kill, Pause, Resume and Restart (on the
// same port, with every item lost) come from testserver.Process.
type Server struct {
	*testserver.Process
}

// Start starts a memcached and waits until it accepts connections. It is
// killed when the test ends.
func Start(t testing.TB, o *Options) *Server {
	t.Helper()
	path := testserver.LookPath(t, "memcached", Install)
	port := testserver.FreePort(t)
	name := "memcached :" + strconv.Itoa(port)
	return &Server{Process: testserver.Start(t, name, path, o.args(port), port, "")}
}

// StartN starts n servers with the same options.
func StartN(t testing.TB, n int, o *Options) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, o)
	}
	return servers
}

// ClientTimeout is the socket timeout of the clients made by Client.
const ClientTimeout = time.Second

// Client returns a new gomemcache client of s, closed when the test ends.
// Its pool keeps up to 128 idle connections, so concurrent tests and
// benchmarks reuse connections instead of dialling for every call.
func (s *Server) Client(t testing.TB) *memcache.Client {
	t.Helper()
	c := memcache.New(s.Addr())
	c.Timeout = ClientTimeout
	c.MaxIdleConns = 128
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Do sends one raw text-protocol command (without its trailing CRLF) on a
// fresh connection and hands the reply to read. Tests use it for what
// gomemcache does not expose, such as stats and meta commands.
func (s *Server) Do(cmd string, read func(r *bufio.Reader) error) error {
	c, err := net.DialTimeout("tcp", s.Addr(), ClientTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return err
	}
	if err := read(bufio.NewReader(c)); err != nil {
		return fmt.Errorf("memcachetest: reply to %q: %w", cmd, err)
	}
	return nil
}

// readLine reads one reply line without its CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	return strings.TrimSuffix(line, "\r\n"), err
}

// Stats returns the server's general statistics ("stats").
func (s *Server) Stats() (map[string]string, error) {
	stats := make(map[string]string)
	err := s.Do("stats", func(r *bufio.Reader) error {
		for {
			l, err := readLine(r)
			switch {
			case err != nil:
				return err
			case l == "END":
				return nil
			}
			if f := strings.Fields(l); len(f) == 3 && f[0] == "STAT" {
				stats[f[1]] = f[2]
			}
		}
	})
	return stats, err
}

// Stat returns one statistic as a number.
func (s *Server) Stat(name string) (int64, error) {
	stats, err := s.Stats()
	if err != nil {
		return 0, err
	}
	v, ok := stats[name]
	if !ok {
		return 0, fmt.Errorf("memcachetest: no statistic %q", name)
	}
	return strconv.ParseInt(v, 10, 64)
}

// Item is what the meta get command says about a key.
type Item struct {
	Value string
	// TTL is the remaining time to live in whole seconds, -1 for an item
	// that never expires.
	TTL int64
}

// Get reads key with the meta get command ("mg <key> v t"), which, unlike
// gomemcache, also returns the remaining TTL. It reports false when the
// key is missing (or expired).
func (s *Server) Get(key string) (it Item, found bool, err error) {
	err = s.Do("mg "+key+" v t", func(r *bufio.Reader) error {
		head, err := readLine(r)
		if err != nil {
			return err
		}
		if head == "EN" {
			return nil
		}
		f := strings.Fields(head) // VA <size> t<ttl>
		if len(f) != 3 || f[0] != "VA" || !strings.HasPrefix(f[2], "t") {
			return fmt.Errorf("unexpected line %q", head)
		}
		if it.TTL, err = strconv.ParseInt(f[2][1:], 10, 64); err != nil {
			return fmt.Errorf("unexpected line %q: %w", head, err)
		}
		if it.Value, err = readLine(r); err != nil {
			return err
		}
		found = true
		return nil
	})
	return it, found, err
}
