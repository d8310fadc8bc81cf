package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/internal/testing/testserver"
)

// The cluster and Sentinel URL forms reach the same locks as the library
// and as a plain URL of the node that holds them.
func TestClusterAndSentinelURLs(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		sn := redistest.StartSentinel(t)
		url := "redis+sentinel://" + sn.Sentinel.Addr() + "/" + redistest.MasterSet
		holdAndInspect(t, url, "redis://"+sn.Master.Addr())
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.SharedCluster(t)
		url := "redis+cluster://" + strings.Join(c.Addrs(), ",") + "?prefix=forms:"
		holdAndInspect(t, url, "")
		code, stdout, stderr := lockctl(t, nil, "check", "--json", "--workers", "4", "--duration", "1s", "--store", url)
		var rep checkReport
		if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || !rep.OK || rep.Acquisitions == 0 {
			t.Errorf("check on the cluster: exit %d, %v, %s; stderr %q", code, err, stdout, stderr)
		}
	})
}

// holdAndInspect runs a command under a lock through url and checks that
// status through url, and through direct if given, sees it held.
func holdAndInspect(t *testing.T, url, direct string) {
	s := newScene(t)
	p := s.run("holder", []string{"--store", url, "--fence-env", "F"}, "forms/job", "WAIT=1", "FENCE_ENV=F")
	_, fence := s.ready("holder")
	for _, u := range []string{url, direct} {
		if u == "" {
			continue
		}
		code, stdout, stderr := lockctl(t, nil, "status", "--store", u, "forms/job")
		lines := strings.Split(stdout, "\n")
		if code != 0 || !strings.HasPrefix(stdout, "forms/job: held by ") || len(lines) < 3 || len(strings.Fields(lines[2])) < 4 || strings.Fields(lines[2])[3] != fence {
			t.Errorf("status --store %s: exit %d, stdout %q, stderr %q; want held with fence %s", u, code, stdout, stderr, fence)
		}
	}
	s.finish("holder")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run --store %s: exit %d; stderr %s", url, code, p.stderr)
	}
}

// The URL forms of rueidis reach the same server: unix:///path.sock with
// ?db=N, and valkey://, as redis://HOST:PORT/N sees them.
func TestRueidisURLForms(t *testing.T) {
	path := testserver.LookPath(t, "redis-server", redistest.Install)
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	port := testserver.FreePort(t)
	srv := testserver.Start(t, "redis-server (unix socket)", path, []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--unixsocket", sock, "--unixsocketperm", "700",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
	}, port, dir)
	holdAndInspect(t, "unix://"+sock+"?db=2", "redis://"+srv.Addr()+"/2")
	holdAndInspect(t, "valkey://"+srv.Addr()+"?db=3", "redis://"+srv.Addr()+"/3")
	// The database is honoured: database 0 holds nothing.
	s := newScene(t)
	p := s.run("db2", []string{"--store", "unix://" + sock + "?db=2"}, "forms/db", "WAIT=1")
	s.ready("db2")
	code, stdout, _ := lockctl(t, nil, "status", "--store", "redis://"+srv.Addr(), "forms/db")
	if code != 0 || !strings.HasPrefix(stdout, "forms/db: free\n") {
		t.Errorf("status on database 0 of a lock held on database 2: exit %d, %q; want free", code, stdout)
	}
	s.finish("db2")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run over unix://: exit %d; stderr %s", code, p.stderr)
	}
}
