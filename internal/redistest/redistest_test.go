package redistest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.CloseShared()
	os.Exit(code)
}

func TestServerVerbs(t *testing.T) {
	s := redistest.Start(t)
	c := s.NewClient(t)
	ctx := t.Context()
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET on a fresh server: %v", err)
	}
	for param, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1"} {
		got, err := s.Do("CONFIG", "GET", param).AsStrMap()
		if err != nil || got[param] != want {
			t.Errorf("CONFIG GET %s = %q, %v; want %q", param, got[param], err, want)
		}
	}
	if err := s.Do("DEBUG", "SLEEP", "0").Error(); err != nil {
		t.Errorf("DEBUG SLEEP 0 = %v; want the DEBUG command enabled", err)
	}

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if s.Answers(200 * time.Millisecond) {
		t.Fatal("server answered PING while paused")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if !s.Answers(5 * time.Second) {
		t.Fatal("server does not answer PING after Resume")
	}

	port := s.Port
	s.Kill()
	if s.Answers(200 * time.Millisecond) {
		t.Fatal("server answered PING after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port != port || !s.Answers(5*time.Second) {
		t.Fatalf("server on port %d does not answer after Restart on port %d", s.Port, port)
	}
	// No persistence: a restarted server comes back empty.
	n, err := s.Do("DBSIZE").AsInt64()
	if err != nil || n != 0 {
		t.Errorf("DBSIZE after Restart = %d, %v; want 0", n, err)
	}
}

func TestStartN(t *testing.T) {
	servers := redistest.StartN(t, 3)
	seen := make(map[int]bool)
	for i, s := range servers {
		if seen[s.Port] {
			t.Fatalf("server %d shares port %d with another", i, s.Port)
		}
		seen[s.Port] = true
		if err := s.Do("SET", "who", fmt.Sprint(i)).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range servers {
		if got, err := s.Do("GET", "who").ToString(); err != nil || got != fmt.Sprint(i) {
			t.Errorf("server %d: GET who = %q, %v; want %d: servers are not independent", i, got, err, i)
		}
	}
}

func TestSlot(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, key := range []string{"", "a", "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "}{", "\xff\x00"} {
		want, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", key).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if got := redistest.Slot(key); got != int(want) {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}

func TestClusterFailover(t *testing.T) {
	c := redistest.SharedCluster(t)
	client := c.NewClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const key = "{failover}k"
	slot := redistest.Slot(key)
	if err := client.Do(ctx, client.B().Set().Key(key).Value("before").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	old := c.MasterOf(t, slot)
	replica := c.ReplicaOf(t, old)
	if replica == old {
		t.Fatal("ReplicaOf returned the master")
	}
	promoted := c.Failover(t, slot)
	if promoted != replica {
		t.Fatalf("Failover promoted %s; want the replica %s", promoted.Name, replica.Name)
	}
	if now := c.MasterOf(t, slot); now != replica {
		t.Fatalf("after Failover, slot %d is served by %s; want %s", slot, now.Name, replica.Name)
	}
	if c.ReplicaOf(t, replica) != old {
		t.Errorf("after Failover, the old master %s is not the new master's replica", old.Name)
	}
	// The coordinated failover loses no write, and the client follows it.
	got, err := client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
	if err != nil || got != "before" {
		t.Fatalf("GET %s after failover = %q, %v; want %q", key, got, err, "before")
	}
}

func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	c := s.NewClient(t)
	ctx := t.Context()
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET through the sentinel client: %v", err)
	}
	if got, err := s.Master.Do("GET", "k").ToString(); err != nil || got != "v" {
		t.Fatalf("GET k on the master = %q, %v; want the write made through the sentinel client", got, err)
	}
	if _, ok := c.Nodes()[s.Master.Addr()]; !ok {
		t.Errorf("the sentinel client talks to %v; want the master %s", c.Nodes(), s.Master.Addr())
	}
}
