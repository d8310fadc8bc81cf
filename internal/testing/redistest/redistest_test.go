package redistest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/testing/redistest"
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

func TestFaultVerbs(t *testing.T) {
	s := redistest.Start(t)
	c := s.NewClient(t)
	ctx := t.Context()
	set := func(key string, ttl time.Duration) {
		t.Helper()
		if err := c.Do(ctx, c.B().Set().Key(key).Value("v").PxMilliseconds(ttl.Milliseconds()).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}

	t.Run("PExpire", func(t *testing.T) {
		set("pexpire", time.Hour)
		if ok, err := s.PExpire("pexpire", time.Millisecond); err != nil || !ok {
			t.Fatalf("PExpire(pexpire) = %v, %v; want true", ok, err)
		}
		if ok, err := s.PExpire("missing", time.Millisecond); err != nil || ok {
			t.Fatalf("PExpire(missing) = %v, %v; want false", ok, err)
		}
		eventually(t, func() bool { n, _ := s.Do("EXISTS", "pexpire").AsInt64(); return n == 0 })
	})

	t.Run("ClientPause writes", func(t *testing.T) {
		if err := s.ClientPause(time.Minute, true); err != nil {
			t.Fatal(err)
		}
		wrote := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			wrote <- c.Do(wctx, c.B().Set().Key("paused").Value("v").Build()).Error()
		}()
		// Reads answer during a write pause; the write waits. (The read
		// goes through a client of its own: on c's connection it could
		// queue behind the paused write.)
		r := s.NewClient(t)
		if _, err := r.Do(ctx, r.B().Get().Key("paused").Build()).ToString(); !rueidis.IsRedisNil(err) {
			t.Errorf("GET during a write pause = %v; want nil reply", err)
		}
		select {
		case err := <-wrote:
			t.Fatalf("SET answered during CLIENT PAUSE WRITE: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if err := s.ClientUnpause(); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("SET after CLIENT UNPAUSE = %v", err)
		}
	})

	t.Run("DebugSleep", func(t *testing.T) {
		done := make(chan error, 1)
		go func() { done <- s.DebugSleep(time.Second) }()
		// Wait until the server is asleep: a PING then gets no answer.
		eventually(t, func() bool {
			pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return c.Do(pctx, c.B().Ping().Build()).Error() != nil
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !s.Answers(5 * time.Second) {
			t.Fatal("server does not answer after DEBUG SLEEP")
		}
	})

	t.Run("ScriptFlush", func(t *testing.T) {
		sha, err := s.Do("SCRIPT", "LOAD", "return 1").ToString()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ScriptFlush(); err != nil {
			t.Fatal(err)
		}
		if err := s.Do("EVALSHA", sha, "0").Error(); err == nil || !strings.Contains(err.Error(), "NOSCRIPT") {
			t.Fatalf("EVALSHA after ScriptFlush = %v; want NOSCRIPT", err)
		}
	})

	t.Run("restarts", func(t *testing.T) {
		set("kept", time.Hour)
		set("expires", 200*time.Millisecond)
		if err := s.RestartPersisted(); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Do("EXISTS", "kept").AsInt64(); err != nil || n != 1 {
			t.Fatalf("EXISTS kept after RestartPersisted = %d, %v; want 1", n, err)
		}
		eventually(t, func() bool { n, _ := s.Do("EXISTS", "expires").AsInt64(); return n == 0 })
		if err := s.RestartAfter(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// The snapshot of the persisted restart is not loaded again.
		if n, err := s.DBSize(); err != nil || n != 0 {
			t.Fatalf("DBSIZE after RestartAfter = %d, %v; want 0 (empty restart)", n, err)
		}
	})
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
