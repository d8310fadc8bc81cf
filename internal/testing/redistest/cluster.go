package redistest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redisstore"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// Cluster is a Redis Cluster of three masters with one replica each,
// created with redis-cli --cluster create. Which node is a master changes
// with failovers: ask MasterOf and ReplicaOf rather than assuming.
type Cluster struct {
	Nodes []*Server
}

const (
	clusterMasters  = 3
	clusterReplicas = 1
	clusterSlots    = 16384
	// How long creation, and the settling after a failover, may take.
	clusterTimeout = 60 * time.Second
)

// StartCluster starts a Cluster for the test; its nodes are killed when
// the test ends. It returns once every node reports cluster_state:ok with
// all slots covered and every replica is in sync.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	server := testserver.LookPath(t, "redis-server", Install)
	cli := testserver.LookPath(t, "redis-cli", Install)
	c, err := buildCluster(server, cli, func() (string, error) { return t.TempDir(), nil })
	if c != nil {
		t.Cleanup(c.Close)
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

var shared struct {
	once    sync.Once
	cluster *Cluster
	dirs    []string
	err     error
}

// SharedCluster returns the Cluster shared by every test of the test
// binary, starting it on first use. Tests sharing it must keep apart by key
// prefix. The package's TestMain must call CloseShared after m.Run.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	testserver.LookPath(t, "redis-server", Install) // skip, or fail, before trying
	testserver.LookPath(t, "redis-cli", Install)
	shared.once.Do(func() {
		server, err := lookPath("redis-server")
		if err != nil {
			shared.err = err
			return
		}
		cli, err := lookPath("redis-cli")
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster, shared.err = buildCluster(server, cli, func() (string, error) {
			dir, err := os.MkdirTemp("", "redistest-cluster-")
			if err == nil {
				shared.dirs = append(shared.dirs, dir)
			}
			return dir, err
		})
	})
	if shared.err != nil {
		t.Fatalf("redistest: shared cluster: %v", shared.err)
	}
	return shared.cluster
}

// CloseShared stops the shared Cluster, if one was started, and removes
// its directories.
func CloseShared() {
	if shared.cluster != nil {
		shared.cluster.Close()
	}
	for _, d := range shared.dirs {
		_ = os.RemoveAll(d)
	}
}

func buildCluster(server, cli string, tempDir func() (string, error)) (*Cluster, error) {
	c := &Cluster{}
	var addrs []string
	for range clusterMasters * (1 + clusterReplicas) {
		dir, err := tempDir()
		if err != nil {
			return c, err
		}
		s, err := launch(server, dir,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "3000",
		)
		if err != nil {
			return c, err
		}
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(clusterReplicas), "--cluster-yes")
	if out, err := testserver.Run(context.Background(), clusterTimeout, cli, args...); err != nil {
		return c, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	return c, c.waitHealthy()
}

// Close kills every node.
func (c *Cluster) Close() {
	for _, s := range c.Nodes {
		s.Close()
	}
}

// Addrs returns the nodes' addresses, as seeds for a cluster client.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// NewClient returns a new cluster client for the code under test, closed
// when t ends. opts may adjust the client's options.
func (c *Cluster) NewClient(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return clientFor(t, c.Addrs(), opts)
}

// WaitHealthy waits until every running node reports cluster_state:ok
// with every slot covered and every replica is in sync with its master.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	if err := c.waitHealthy(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

func (c *Cluster) waitHealthy() error {
	return poll(clusterTimeout, func() error {
		agreed := ""
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			info, err := s.Do("CLUSTER", "INFO").ToString()
			if err != nil {
				return fmt.Errorf("%s: CLUSTER INFO: %w", s.Name, err)
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"} {
				if !strings.Contains(info, want+"\r\n") {
					return fmt.Errorf("%s: CLUSTER INFO lacks %s: %w", s.Name, want, errNotYet)
				}
			}
			nodes, err := c.view(s)
			if err != nil {
				return err
			}
			if err := c.checkView(s, nodes); err != nil {
				return err
			}
			if sig := signature(nodes); agreed == "" {
				agreed = sig
			} else if sig != agreed {
				return fmt.Errorf("%s sees the masters as %s, another node as %s: %w", s.Name, sig, agreed, errNotYet)
			}
			me := nodes[s.Port]
			if !me.master {
				repl, err := s.Do("INFO", "replication").ToString()
				if err != nil {
					return fmt.Errorf("%s: INFO replication: %w", s.Name, err)
				}
				if !strings.Contains(repl, "master_link_status:up") {
					return fmt.Errorf("%s: replica not in sync with its master: %w", s.Name, errNotYet)
				}
			}
		}
		return nil
	})
}

// checkView checks that s sees the full topology: every node known and
// not failing, three masters owning all slots, each with a replica.
func (c *Cluster) checkView(s *Server, nodes map[int]node) error {
	if len(nodes) != len(c.Nodes) {
		return fmt.Errorf("%s knows %d nodes, want %d: %w", s.Name, len(nodes), len(c.Nodes), errNotYet)
	}
	masters, slots := 0, 0
	replicas := make(map[string]int)
	for _, n := range nodes {
		if n.failing {
			return fmt.Errorf("%s sees node :%d failing: %w", s.Name, n.port, errNotYet)
		}
		if n.master {
			masters++
			for _, r := range n.slots {
				slots += r[1] - r[0] + 1
			}
		} else {
			replicas[n.masterID]++
		}
	}
	if masters != clusterMasters || slots != clusterSlots {
		return fmt.Errorf("%s sees %d masters owning %d slots: %w", s.Name, masters, slots, errNotYet)
	}
	for _, n := range nodes {
		if n.master && replicas[n.id] != clusterReplicas {
			return fmt.Errorf("%s sees master :%d with %d replicas: %w", s.Name, n.port, replicas[n.id], errNotYet)
		}
	}
	return nil
}

// signature renders which node is master of which slots, so views can be
// compared.
func signature(nodes map[int]node) string {
	var parts []string
	for _, n := range nodes {
		if n.master {
			parts = append(parts, fmt.Sprintf("%d:%v", n.port, n.slots))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// MasterOf returns the node serving slot, as the running nodes see it.
func (c *Cluster) MasterOf(t testing.TB, slot int) *Server {
	t.Helper()
	s, err := c.masterOf(slot)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

func (c *Cluster) masterOf(slot int) (*Server, error) {
	nodes, err := c.anyView()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.master && n.owns(slot) {
			return c.byPort(n.port)
		}
	}
	return nil, fmt.Errorf("no master serves slot %d", slot)
}

// ReplicaOf returns a replica of master.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	s, err := c.replicaOf(master)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

func (c *Cluster) replicaOf(master *Server) (*Server, error) {
	nodes, err := c.anyView()
	if err != nil {
		return nil, err
	}
	m, ok := nodes[master.Port]
	if !ok {
		return nil, fmt.Errorf("%s is not in the cluster", master.Name)
	}
	for _, n := range nodes {
		if !n.master && n.masterID == m.id {
			return c.byPort(n.port)
		}
	}
	return nil, fmt.Errorf("%s has no replica", master.Name)
}

// Failover makes the replica of the master serving slot take over, with
// CLUSTER FAILOVER (the coordinated, manual failover), and waits until the
// cluster is healthy again with that replica serving slot. It returns the
// new master.
func (c *Cluster) Failover(t testing.TB, slot int) *Server {
	t.Helper()
	s, err := c.FailoverSlot(slot)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// FailoverSlot is Failover returning an error instead of failing a test,
// for use as a fault injected from a goroutine other than the test's.
func (c *Cluster) FailoverSlot(slot int) (*Server, error) {
	old, err := c.masterOf(slot)
	if err != nil {
		return nil, err
	}
	replica, err := c.replicaOf(old)
	if err != nil {
		return nil, err
	}
	// Every node must see the replica serving slot. A manual failover
	// gives up after a few seconds if the master does not answer in time
	// (under load, say): ask again while the replica is still a replica.
	seenByAll := func() error {
		for _, s := range c.Nodes {
			nodes, err := c.view(s)
			if err != nil {
				return err
			}
			if n := nodes[replica.Port]; !n.master || !n.owns(slot) {
				return fmt.Errorf("%s does not yet see %s serving slot %d: %w", s.Name, replica.Name, slot, errNotYet)
			}
		}
		return nil
	}
	err = poll(clusterTimeout, func() error {
		role, err := replica.Do("ROLE").ToArray()
		if err != nil || len(role) == 0 {
			return fmt.Errorf("ROLE on %s: %v", replica.Name, err)
		}
		if r, _ := role[0].ToString(); r == "slave" {
			if err := replica.Do("CLUSTER", "FAILOVER").Error(); err != nil {
				return fmt.Errorf("CLUSTER FAILOVER on %s: %w", replica.Name, err)
			}
		}
		if err := poll(5*time.Second, seenByAll); err != nil {
			return err
		}
		// A failover won can be undone moments later (the old master
		// reclaiming the slots after a config-epoch collision, seen with
		// failovers in quick succession): it must hold for a while.
		if err := holds(time.Second, seenByAll); err != nil {
			return err
		}
		return c.waitHealthy()
	})
	if err != nil {
		return nil, fmt.Errorf("failover of slot %d to %s: %w", slot, replica.Name, err)
	}
	return replica, nil
}

func (c *Cluster) byPort(port int) (*Server, error) {
	for _, s := range c.Nodes {
		if s.Port == port {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no node on port %d", port)
}

// node is one line of CLUSTER NODES.
type node struct {
	id       string
	port     int
	master   bool
	failing  bool
	masterID string
	slots    [][2]int
}

func (n node) owns(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// anyView returns the topology as the first running node that answers
// sees it.
func (c *Cluster) anyView() (map[int]node, error) {
	var errs []string
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		nodes, err := c.view(s)
		if err == nil {
			return nodes, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("no node answers CLUSTER NODES: %s", strings.Join(errs, "; "))
}

// view returns the topology as s sees it, by port.
func (c *Cluster) view(s *Server) (map[int]node, error) {
	text, err := s.Do("CLUSTER", "NODES").ToString()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", s.Name, err)
	}
	text = strings.TrimPrefix(text, "txt:") // RESP3 verbatim string
	nodes := make(map[int]node)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		n, err := parseNode(line)
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER NODES: %w", s.Name, err)
		}
		nodes[n.port] = n
	}
	return nodes, nil
}

func parseNode(line string) (node, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return node{}, fmt.Errorf("short line %q", line)
	}
	addr, _, _ := strings.Cut(f[1], "@")
	i := strings.LastIndexByte(addr, ':')
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		return node{}, fmt.Errorf("address in %q: %w", line, err)
	}
	n := node{id: f[0], port: port, masterID: f[3]}
	for _, flag := range strings.Split(f[2], ",") {
		switch flag {
		case "master":
			n.master = true
		case "fail", "fail?", "noaddr", "handshake":
			n.failing = true
		}
	}
	for _, r := range f[8:] {
		if strings.HasPrefix(r, "[") { // a slot being migrated or imported
			continue
		}
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return node{}, fmt.Errorf("slots in %q: %w", line, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return node{}, fmt.Errorf("slots in %q: %w", line, err)
			}
		}
		n.slots = append(n.slots, [2]int{a, b})
	}
	return n, nil
}

// Slot returns the cluster hash slot of key, as the stores compute it.
func Slot(key string) int { return redisstore.Slot(key) }
