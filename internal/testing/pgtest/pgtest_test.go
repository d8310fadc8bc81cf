package pgtest_test

import (
	"os"
	"testing"

	"github.com/lockkit/lock/internal/testing/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseShared()
	os.Exit(code)
}

// A server answers, keeps what was committed through a kill -9 and a
// restart on the same data and port, and is gone once killed.
func TestKillRestartKeepsCommittedData(t *testing.T) {
	s := pgtest.Start(t)
	ctx := t.Context()
	if out, err := s.Psql(ctx, "", "CREATE TABLE t (v int); INSERT INTO t VALUES (42); SHOW fsync"); err != nil || out != "off" {
		t.Fatalf("Psql = %q, %v; want fsync off", out, err)
	}
	if os.Geteuid() == 0 {
		out, err := s.Psql(ctx, "", "SELECT current_setting('data_directory')")
		if err != nil || out != s.Data {
			t.Fatalf("data_directory = %q, %v; want %q", out, err, s.Data)
		}
	}
	port := s.Port
	s.Kill()
	if _, err := s.Psql(ctx, "", "SELECT 1"); err == nil {
		t.Fatal("psql connected to a killed server")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	out, err := s.Psql(ctx, "", "SELECT v FROM t")
	if err != nil || out != "42" || s.Port != port {
		t.Fatalf("after a kill and a restart: SELECT v = %q, %v on port %d; want 42 on port %d", out, err, s.Port, port)
	}
}

// The shared server is one per test binary.
func TestShared(t *testing.T) {
	a, b := pgtest.Shared(t), pgtest.Shared(t)
	if a != b {
		t.Fatal("Shared returned two servers")
	}
	if out, err := a.Psql(t.Context(), "", "SELECT 1"); err != nil || out != "1" {
		t.Fatalf("SELECT 1 = %q, %v", out, err)
	}
	if u := a.URL("x"); u != "postgres://postgres@"+a.Addr()+"/x?sslmode=disable" {
		t.Errorf("URL(x) = %q", u)
	}
}
