package main

import (
	"strings"
	"testing"

	"github.com/lockkit/lock"
)

// localhost, 127.0.0.1 and [::1] (in any spelling) on one port are one
// server: a Redlock over them is refused before anything connects, as two
// spellings of any one server are, and a lock file taken on one of them
// is taken on the others. Other loopback addresses and other ports stay
// other servers.
func TestLoopbackSpellingsOneServer(t *testing.T) {
	for _, tc := range [][]string{
		{"redis://localhost:6390", "redis://127.0.0.1:6390", "redis://127.0.0.2:1"},
		{"redis://127.0.0.1:6390", "redis://127.0.0.2:1", "redis://[::1]:6390/1"},
		{"redis://LocalHost.:6390", "redis://[0:0:0:0:0:0:0:1]:6390?prefix=x:", "redis://127.0.0.2:1"},
		{"redis://[::ffff:127.0.0.1]:6390", "redis://localhost:6390", "redis://127.0.0.2:1"},
		{"redis+cluster://127.0.0.3:1,localhost:7000", "redis://127.0.0.1:7000", "redis://127.0.0.2:1"},
		{"memcache://localhost", "memcache://127.0.0.1:11211", "memcache://127.0.0.2:1"},
		{"etcd://[::1]:2379", "etcd://localhost", "etcd://127.0.0.2:1"},
		{"postgres://localhost:5432/a", "postgres://127.0.0.1/b", "postgres://127.0.0.2:1/a"},
		{"redis+sentinel://localhost/m", "redis+sentinel://127.0.0.1:26379/m", "redis://127.0.0.2:1"},
	} {
		var args []string
		for _, u := range tc {
			args = append(args, "--store", u)
		}
		code, _, stderr := runCLI(t, nil, append(append([]string{"status"}, args...), "r")...)
		if code != exitUsage || !strings.Contains(stderr, "one server") {
			t.Errorf("status --store %s: exit %d, stderr %q; want %d and a message that two are one server", strings.Join(tc, " --store "), code, stderr, exitUsage)
		}
	}

	for _, tc := range [][]string{
		{"redis://localhost:1", "redis://127.0.0.1:2", "redis://[::1]:3"},
		{"redis://localhost:1", "redis://127.0.0.2:1", "redis://[::2]:1"},
		{"redis+sentinel://localhost:1/a", "redis+sentinel://127.0.0.1:1/b", "redis+sentinel://[::1]:1/c"},
	} {
		specs := make([]*storeSpec, 0, len(tc))
		for _, u := range tc {
			spec, err := parseStore(u)
			if err != nil {
				t.Fatalf("parseStore(%q): %v", u, err)
			}
			if other, server, ok := sameServer(specs, spec); ok {
				t.Errorf("%s and %s taken for one server (%s); want distinct servers", other.display, spec.display, server)
			}
			specs = append(specs, spec)
		}
	}

	// A lock taken on localhost is on 127.0.0.1 and [::1], but not on another port.
	acquired, err := parseStore("redis://localhost:6390")
	if err != nil {
		t.Fatal(err)
	}
	lf := lockFile{Lock: lock.Lock{Resource: "r", Token: "t"}, Stores: recordStores([]*storeSpec{acquired})}
	for u, want := range map[string]int{"redis://127.0.0.1:6390": exitOK, "redis://[::1]:6390": exitOK, "redis://127.0.0.1:6391": exitUsage} {
		spec, err := parseStore(u)
		if err != nil {
			t.Fatal(err)
		}
		if got := exitCode(checkStores("F", lf, []*storeSpec{spec})); got != want {
			t.Errorf("a lock taken on redis://localhost:6390, given --store %s: status %d; want %d", u, got, want)
		}
	}
}

// --fence-env over a Redlock with an etcd:// store is refused from the
// URLs (status 2), before connecting: unreachable, the stores made it a
// quorum failure (status 1), which docs/lockctl.md says it is not.
func TestFenceEnvEtcdRedlockRefusedBeforeConnecting(t *testing.T) {
	stores := []string{"--store", "redis://" + closedPort(t), "--store", "etcd://" + closedPort(t), "--store", "etcd://" + closedPort(t) + "?dial_timeout=2s"}
	for _, args := range [][]string{
		append(append([]string{"run", "--fence-env", "FENCE"}, stores...), "deploy", "--", "true"),
		append(append([]string{"elect", "--fence-env", "FENCE"}, stores...), "role", "--", "true"),
	} {
		code, _, stderr := runCLI(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "--fence-env") || strings.Contains(stderr, "reachable") {
			t.Errorf("lockctl %s: exit %d, stderr %q; want %d, a refusal of --fence-env before connecting", strings.Join(args, " "), code, stderr, exitUsage)
		}
	}
}
