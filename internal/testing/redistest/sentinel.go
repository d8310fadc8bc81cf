package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// MasterSet is the name under which the Sentinel fixture monitors its
// master.
const MasterSet = "lockkit"

// Sentinel is a master, one replica and one Sentinel monitoring them.
type Sentinel struct {
	Master, Replica, Sentinel *Server
}

// StartSentinel starts a Sentinel setup for the test and returns once the
// replica is in sync and the Sentinel knows both.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	path := testserver.LookPath(t, "redis-server", Install)
	master := Start(t)
	replica, err := launch(path, t.TempDir(), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	if err != nil {
		t.Fatalf("redistest: replica: %v", err)
	}
	t.Cleanup(replica.Close)

	// A Sentinel rewrites its configuration file, so it needs one of its
	// own; the port goes in it too, as the file is read before arguments.
	dir := t.TempDir()
	var sentinel *Server
	for range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
			port, dir, MasterSet, master.Port, MasterSet, MasterSet)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := testserver.Launch("redis-sentinel :"+strconv.Itoa(port), path, []string{conf, "--sentinel"}, port, dir)
		if err != nil {
			continue
		}
		sentinel = &Server{Process: p}
		if sentinel.admin, err = newClient(rueidis.ClientOption{InitAddress: []string{p.Addr()}, ForceSingleClient: true, PipelineMultiplex: -1, AlwaysPipelining: true}); err != nil {
			p.Kill()
			t.Fatalf("redistest: admin client of the sentinel: %v", err)
		}
		break
	}
	if sentinel == nil {
		t.Fatal("redistest: could not start a sentinel")
	}
	t.Cleanup(sentinel.Close)

	s := &Sentinel{Master: master, Replica: replica, Sentinel: sentinel}
	err = poll(30*time.Second, func() error {
		addr, err := sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterSet).AsStrSlice()
		if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(master.Port) {
			return fmt.Errorf("sentinel reports master %v, %v: %w", addr, err, errNotYet)
		}
		repl, err := replica.Do("INFO", "replication").ToString()
		if err != nil || !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("replica not in sync (%v): %w", err, errNotYet)
		}
		replicas, err := sentinel.Do("SENTINEL", "REPLICAS", MasterSet).ToArray()
		if err != nil || len(replicas) != 1 {
			return fmt.Errorf("sentinel knows %d replicas (%v): %w", len(replicas), err, errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: sentinel setup: %v", err)
	}
	return s
}

// NewClient returns a new client that finds the master through the
// Sentinel, closed when t ends.
func (s *Sentinel) NewClient(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return clientFor(t, []string{s.Sentinel.Addr()}, append([]func(*rueidis.ClientOption){func(o *rueidis.ClientOption) {
		o.Sentinel.MasterSet = MasterSet
	}}, opts...))
}
