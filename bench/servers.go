package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// servers are the server processes of a run, all on loopback.
type servers struct {
	dir       string
	redis     []*testserver.Process // redis[0] serves the single-server sections; all five, Redlock
	memcached *testserver.Process

	mu     sync.Mutex
	killed bool
}

// startServers starts five redis-server masters and one memcached on free
// loopback ports. They are killed by stop, when the harness is
// interrupted, and by the kernel if the harness dies (testserver sets the
// parent-death signal).
func startServers(nRedis int) (*servers, error) {
	redisPath, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (%w): apt-get install redis-server", err)
	}
	mcPath, err := exec.LookPath("memcached")
	if err != nil {
		return nil, fmt.Errorf("memcached not found (%w): apt-get install memcached", err)
	}
	dir, err := os.MkdirTemp("", "lockkit-bench-")
	if err != nil {
		return nil, err
	}
	s := &servers{dir: dir}
	s.handleSignals()
	for i := range nRedis {
		d := fmt.Sprintf("%s/redis%d", dir, i)
		if err := os.Mkdir(d, 0o755); err != nil {
			s.stop()
			return nil, err
		}
		p, err := launch(func(port int) (string, string, []string) {
			return "redis-server :" + strconv.Itoa(port), redisPath, []string{
				"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d,
				"--save", "", "--appendonly", "no", "--daemonize", "no",
			}
		}, d)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.add(func() { s.redis = append(s.redis, p) })
	}
	p, err := launch(func(port int) (string, string, []string) {
		args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", "256", "-c", "4096"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		return "memcached :" + strconv.Itoa(port), mcPath, args
	}, "")
	if err != nil {
		s.stop()
		return nil, err
	}
	s.add(func() { s.memcached = p })
	return s, nil
}

func (s *servers) add(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// launch starts a server on a free port, trying another port if one was
// taken in between.
func launch(cmd func(port int) (name, path string, args []string), dir string) (*testserver.Process, error) {
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			return nil, err
		}
		name, path, args := cmd(port)
		var p *testserver.Process
		if p, err = testserver.Launch(name, path, args, port, dir); err == nil {
			return p, nil
		}
	}
	return nil, err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stop kills every server and removes their directories.
func (s *servers) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		return
	}
	s.killed = true
	for _, p := range s.redis {
		p.Kill()
	}
	if s.memcached != nil {
		s.memcached.Kill()
	}
	_ = os.RemoveAll(s.dir)
}

// handleSignals stops the servers and exits on Ctrl-C or SIGTERM.
func (s *servers) handleSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "\nbench: %v: stopping the servers\n", sig)
		s.stop()
		os.Exit(130)
	}()
}

// versions returns the servers' versions, for the report.
func (s *servers) versions() (redisVersion, memcachedVersion string) {
	c, err := newRueidis(s.redis[0].Addr())
	if err == nil {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, _ := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
				redisVersion = v
			}
		}
	}
	if lines, err := memcachedCommand(s.memcached.Addr(), "version"); err == nil && len(lines) > 0 {
		memcachedVersion = strings.TrimPrefix(lines[0], "VERSION ")
	}
	return redisVersion, memcachedVersion
}
