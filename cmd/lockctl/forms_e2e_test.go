package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
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
		if code != 0 || !strings.HasPrefix(stdout, "forms/job: held\n") || !strings.Contains(stdout, "last fence "+fence) {
			t.Errorf("status --store %s: exit %d, stdout %q, stderr %q; want held with fence %s", u, code, stdout, stderr, fence)
		}
	}
	s.finish("holder")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run --store %s: exit %d; stderr %s", url, code, p.stderr)
	}
}
