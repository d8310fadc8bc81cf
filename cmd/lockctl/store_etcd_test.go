package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	etcdstore "github.com/lockkit/lock/stores/etcd"
)

func TestParseEtcdURLs(t *testing.T) {
	for _, tc := range []struct{ url, display string }{
		{"etcd://localhost", "etcd://localhost"},
		{"etcd://10.0.0.1:2379,10.0.0.2,[::1]:2381?prefix=app/&timeout=2s&min_ttl=1s", "etcd://10.0.0.1:2379,10.0.0.2,[::1]:2381?prefix=app/&timeout=2s&min_ttl=1s"},
		{"etcds://app:s3cret@etcd.example.com?server_name=etcd&insecure", "etcds://app:xxxxx@etcd.example.com?server_name=etcd&insecure"},
	} {
		spec, err := parseStore(tc.url)
		if err != nil {
			t.Errorf("parseStore(%q) = %v", tc.url, err)
			continue
		}
		if spec.kind != "etcd" || spec.display != tc.display || !spec.fences {
			t.Errorf("parseStore(%q) = kind %q, display %q, fences %v; want etcd, %q, true", tc.url, spec.kind, spec.display, spec.fences, tc.display)
		}
	}
	for _, tc := range []struct {
		url  string
		want []string // substrings of the error
	}{
		{"etcd://", []string{"host", "missing"}},
		{"etcd://h/x", []string{"path", "prefix"}},
		{"etcd://h?ca=/x.pem", []string{"query parameter ca", "etcds://"}},
		{"etcd://user@h", []string{"user", "password"}},
		{"etcd://:secret@h", []string{"user", "password"}},
		{"etcd://h?min_ttl=1500ms", []string{"query parameter min_ttl", "whole seconds"}},
		{"etcd://h?timeout=0s", []string{"query parameter timeout"}},
		{"etcd://h?prefx=a", []string{"query parameter prefx", "unknown", "prefix"}},
		{"etcd://h?lease_slack=some", []string{"query parameter lease_slack", "true or false"}},
	} {
		_, err := parseStore(tc.url)
		if err == nil {
			t.Errorf("parseStore(%q) = nil; want an error mentioning %q", tc.url, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseStore(%q) = %v; want it to mention %q", tc.url, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("parseStore(%q) = %v: shows the password", tc.url, err)
		}
	}
}

// check, bench, status and release --force on a real etcd cluster.
func TestEtcd(t *testing.T) {
	c := etcdtest.Start(t, 3, nil)
	flags := []string{"--store", "etcd://" + strings.Join(c.Endpoints(), ",") + "?prefix=lockctl/&min_ttl=1s"}

	t.Run("check", func(t *testing.T) {
		args := append([]string{"check", "--json", "--workers", "4", "--duration", "1s", "--ttl", "2s"}, flags...)
		code, stdout, stderr := lockctl(t, nil, args...)
		var rep checkReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || !rep.OK || rep.Acquisitions == 0 || rep.Violations != 0 || rep.LostUpdates != 0 {
			t.Errorf("lockctl %q: exit %d, %v, %+v, stderr %q; want a pass with acquisitions", args, code, err, rep, stderr)
		}
	})
	t.Run("bench", func(t *testing.T) {
		args := append([]string{"bench", "--json", "--workers", "4", "--duration", "300ms"}, flags...)
		code, stdout, stderr := lockctl(t, nil, args...)
		var rep benchReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || rep.Pairs == 0 || rep.Errors != 0 {
			t.Errorf("lockctl %q: exit %d, %v, %+v, stderr %q; want pairs and no error", args, code, err, rep, stderr)
		}
	})
	// A lock of 20s held by lockctl acquire has a lease of 22s (a tenth
	// of slack), or of 20s with lease_slack=false.
	t.Run("lease_slack", func(t *testing.T) {
		client, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		for _, tc := range []struct {
			param string
			want  int64
		}{{"", 22}, {"&lease_slack=false", 20}, {"&lease_slack=true", 22}} {
			store := "etcd://" + strings.Join(c.Endpoints(), ",") + "?prefix=slack/&min_ttl=1s" + tc.param
			code, stdout, stderr := lockctl(t, nil, "acquire", "--ttl", "20s", "--store", store, "r")
			if code != 0 {
				t.Fatalf("acquire on %s: exit %d, stderr %q", store, code, stderr)
			}
			resp, err := client.Get(t.Context(), "slack/", clientv3.WithPrefix())
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("keys under slack/ = %v, %v; want the lock's one", resp, err)
			}
			ttl, err := client.TimeToLive(t.Context(), clientv3.LeaseID(resp.Kvs[0].Lease))
			if err != nil || ttl.GrantedTTL != tc.want {
				t.Errorf("acquire --ttl 20s on %s: lease granted for %+v, %v; want %ds", store, ttl, err, tc.want)
			}
			if code, _, stderr := lockctlIn(t, stdout, "release", "--store", store, "--lock", "-"); code != 0 {
				t.Fatalf("release on %s: exit %d, stderr %q", store, code, stderr)
			}
		}
	})
	t.Run("status and release", func(t *testing.T) {
		client, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		store, err := etcdstore.New(client, etcdstore.WithPrefix("lockctl/"))
		if err != nil {
			t.Fatal(err)
		}
		locker, err := lock.NewSingle(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := locker.TryLock(t.Context(), "orders/42", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, flags...), "orders/42")...)
		var st statusReport
		if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != 0 || len(st.Stores) != 1 {
			t.Fatalf("status --json: exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
		}
		s := st.Stores[0]
		if s.Held == nil || !*s.Held || s.TTLMillis == nil || *s.TTLMillis <= 0 || s.LastFence == nil || *s.LastFence != l.Fence {
			t.Errorf("status of a held lock: %s; want held, a TTL and the holder's fence %d", stdout, l.Fence)
		}
		code, stdout, stderr = lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, flags...), "orders/42")...)
		if code != 0 || !strings.HasPrefix(stdout, "orders/42: released") {
			t.Errorf("release --force: exit %d, %q, stderr %q; want released", code, stdout, stderr)
		}
		if err := locker.Unlock(t.Context(), l); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("Unlock by the holder after release --force = %v; want ErrNotHeld", err)
		}
	})
}
