// Package etcdtest starts real etcd clusters for the tests of the etcd
// store: N members on free loopback ports, each an etcd process (a
// [testserver.Process]), so tests can kill a member, pause it, restart it
// with its data, and find the leader. It execs the etcd binary and talks
// to the members over etcd's HTTP gateway only, so the library's module
// needs no etcd package.
//
// Members keep their data in a directory on tmpfs (/dev/shm) when there
// is one, so that writes do not wait for a disk, and tick fast: a 100ms
// heartbeat and a 600ms election timeout, so a lost leader is replaced
// within about a second, and the shortest lease is [MinTTL].
//
// When etcd is missing, tests skip with a message saying how to install
// it, or fail when [testserver.Required] says servers are required (CI).
// There is no Docker fallback.
package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// Install is how to install what the fixtures need.
const Install = "apt-get install -y etcd-server (Debian/Ubuntu)"

// The default timing of the clusters.
const (
	Heartbeat       = 100 * time.Millisecond
	ElectionTimeout = 600 * time.Millisecond
	// MinTTL is the shortest lease the clusters grant with the default
	// election timeout: 1.5 election timeouts, rounded up to whole
	// seconds.
	MinTTL = time.Second
)

// Options adjusts a cluster. A nil *Options gives the defaults.
type Options struct {
	// ElectionTimeout, if set, replaces the default election timeout
	// (and so the shortest lease: 1.5 election timeouts, rounded up to
	// whole seconds).
	ElectionTimeout time.Duration
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	dir     string
}

// Member is one etcd process of a cluster. Its Addr is its client
// endpoint.
type Member struct {
	*testserver.Process
	Name     string
	PeerPort int
}

// URL returns the member's client URL.
func (m *Member) URL() string { return "http://" + m.Addr() }

// Start starts an n-member cluster for the test and waits until it has a
// leader; it is killed when the test ends.
func Start(t testing.TB, n int, o *Options) *Cluster {
	t.Helper()
	path := testserver.LookPath(t, "etcd", Install)
	c, err := Launch(path, n, o)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

var shared struct {
	sync.Mutex
	c   *Cluster
	err error
}

// Shared returns a three-member cluster shared by the tests of the test
// binary, started on first use. Tests must not kill or restart its
// members, and should use key prefixes of their own. Call CloseShared
// from TestMain.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	path := testserver.LookPath(t, "etcd", Install)
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil && shared.err == nil {
		shared.c, shared.err = Launch(path, 3, nil)
	}
	if shared.err != nil {
		t.Fatalf("etcdtest: shared cluster: %v", shared.err)
	}
	return shared.c
}

// CloseShared kills the shared cluster, if it was started.
func CloseShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		shared.c.Close()
		shared.c = nil
	}
}

// Launch is Start for a cluster that outlives any one test (a shared
// fixture, or the benchmark's): the caller must Close it. path is the
// etcd binary. It tries other ports if one was taken in between.
func Launch(path string, n int, o *Options) (*Cluster, error) {
	election := ElectionTimeout
	if o != nil && o.ElectionTimeout > 0 {
		election = o.ElectionTimeout
	}
	var err error
	for range 3 {
		var c *Cluster
		if c, err = launch(path, n, election); err == nil {
			return c, nil
		}
	}
	return nil, err
}

func launch(path string, n int, election time.Duration) (*Cluster, error) {
	dir, err := os.MkdirTemp(tmpfs(), "etcdtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	ports, err := freePorts(2 * n)
	if err != nil {
		c.Close()
		return nil, err
	}
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[n+i])
	}
	// Every member waits for the others before it serves: start them all
	// at once.
	c.Members = make([]*Member, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, client, peer := fmt.Sprintf("m%d", i), ports[i], ports[n+i]
			args := []string{
				"--name", name,
				"--data-dir", fmt.Sprintf("%s/%s", dir, name),
				"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", client),
				"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", client),
				"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
				"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
				"--initial-cluster", strings.Join(peers, ","),
				"--initial-cluster-state", "new",
				"--initial-cluster-token", dir,
				"--heartbeat-interval", strconv.Itoa(int(Heartbeat / time.Millisecond)),
				"--election-timeout", strconv.Itoa(int(election / time.Millisecond)),
				"--logger", "zap", "--log-level", "error",
			}
			p, err := testserver.Launch(fmt.Sprintf("etcd %s :%d", name, client), path, args, client, dir)
			c.Members[i], errs[i] = &Member{Process: p, Name: name, PeerPort: peer}, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.WaitLeader(15 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close kills every member and removes the cluster's data.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		if m != nil && m.Process != nil {
			m.Kill()
		}
	}
	_ = os.RemoveAll(c.dir)
}

// Endpoints returns the client endpoints of the members, host:port.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.Addr()
	}
	return eps
}

// Status is what a member says of itself and of the cluster.
type Status struct {
	ID       uint64 // the member's ID
	Leader   uint64 // the ID of the leader it follows; 0 if none
	Term     uint64 // its raft term
	Revision int64  // its store's revision
}

// Status asks m for its status, within timeout.
func (m *Member) Status(timeout time.Duration) (Status, error) {
	var raw struct {
		Header struct {
			MemberID uint64 `json:"member_id,string"`
			Revision int64  `json:"revision,string"`
		} `json:"header"`
		Leader   uint64 `json:"leader,string"`
		RaftTerm uint64 `json:"raftTerm,string"`
	}
	if err := m.post(timeout, "/v3/maintenance/status", &raw); err != nil {
		return Status{}, err
	}
	return Status{ID: raw.Header.MemberID, Leader: raw.Leader, Term: raw.RaftTerm, Revision: raw.Header.Revision}, nil
}

// gateway is the HTTP client of the members' gateways. It keeps no idle
// connection, so that it leaves no goroutine behind for the leak checks.
var gateway = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// post posts an empty request to a gateway path of m and decodes the
// answer into out.
func (m *Member) post(timeout time.Duration, path string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+path, bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	resp, err := gateway.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", m.Name, path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Leader returns the member that a majority of the members answering
// within a second follow as their leader.
func (c *Cluster) Leader() (*Member, error) {
	votes := make(map[uint64]int)
	ids := make(map[uint64]*Member)
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		st, err := m.Status(time.Second)
		if err != nil {
			continue
		}
		ids[st.ID] = m
		if st.Leader != 0 {
			votes[st.Leader]++
		}
	}
	for id, n := range votes {
		if l := ids[id]; l != nil && n > len(c.Members)/2 {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no leader followed by a majority of the %d members (votes by member ID: %v)", len(c.Members), votes)
}

// WaitLeader waits up to timeout for a leader followed by a majority.
func (c *Cluster) WaitLeader(timeout time.Duration) (*Member, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := c.Leader()
		if err == nil {
			return l, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Restart kills m if it runs and starts it again on the same ports with
// its data, and waits until it follows the leader of a majority.
func (c *Cluster) Restart(m *Member) error {
	if err := m.Process.Restart(); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := c.Leader()
		if err == nil {
			var st Status
			if st, err = m.Status(time.Second); err == nil && st.Leader != 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s restarted but did not rejoin the cluster within 15s (leader %v): %v", m.Name, l, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tmpfs returns /dev/shm if it is a writable directory, and otherwise ""
// (the default temporary directory).
func tmpfs() string {
	const shm = "/dev/shm"
	if fi, err := os.Stat(shm); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp(shm, "etcdtest-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return shm
		}
	}
	return ""
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var open []net.Listener
	defer func() {
		for _, l := range open {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		open = append(open, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// LookPath returns the path of the etcd binary, or "" and an error saying
// how to install it, for callers without a testing.TB (the benchmark).
func LookPath() (string, error) {
	path, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd not found (%w): %s", err, Install)
	}
	return path, nil
}
