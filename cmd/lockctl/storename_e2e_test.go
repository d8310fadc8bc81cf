package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// A store URL's name parameter names the store in every message and
// output of lockctl: errors, warnings, the STORE column of status and its
// JSON, release --force's lines, check's stores line. The URL, which may
// hold a password, appears nowhere.
func TestStoreNameParameter(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 2)
	r1 := "redis://" + srvs[0].Addr() + "?name=r1"
	r2 := "redis://" + srvs[1].Addr() + "?name=r2"
	dead := closedPort(t)
	down := "redis://:hunter2@" + dead + "?name=down"
	noURL := func(t *testing.T, what, out string) {
		t.Helper()
		for _, s := range []string{"redis://", "postgres://", "hunter2"} {
			if strings.Contains(out, s) {
				t.Errorf("%s shows %q, though every store has a name: %q", what, s, out)
			}
		}
	}

	// An unreachable lone store.
	for _, tc := range []struct{ url, want string }{
		{down, "store down: cannot connect to " + dead + ":"},
		{"postgres://app:hunter2@" + dead + "/db?name=pgdown&connect_timeout=5", "store pgdown: cannot connect to " + dead + ":"},
		{"memcache://" + dead + "?name=mc", "store mc: cannot connect to " + dead + ":"},
	} {
		code, out, errOut := runCLI(t, nil, "status", "--store", tc.url, "res")
		if code != exitFailure || !strings.HasPrefix(errOut, "lockctl status: "+tc.want) {
			t.Errorf("status --store %s: exit %d, stderr %q; want 1 and %q", tc.url, code, errOut, "lockctl status: "+tc.want+"...")
		}
		noURL(t, "status with an unreachable store", out+errOut)
	}

	// A Redlock with one store down: the warning, then each command's output.
	stores := []string{"--store", r1, "--store", r2, "--store", down, "--store-timeout", storeTimeout.String()}
	cmd := func(args ...string) []string {
		return append(append(append([]string{}, args[:1]...), stores...), args[1:]...)
	}
	code, out, errOut := runCLI(t, nil, cmd("run", "res", "true")...)
	if want := "lockctl: warning: store down: cannot connect to " + dead + ":"; code != exitOK || !strings.HasPrefix(errOut, want) {
		t.Errorf("run with a store down: exit %d, stderr %q; want 0 and %q", code, errOut, want+"...")
	}
	noURL(t, "run", out+errOut)

	code, out, errOut = runCLI(t, nil, cmd("status", "res")...)
	var column []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  ") && f[0] != "read-write" {
			column = append(column, f[0])
		}
	}
	if got := strings.Join(column, " "); got != "STORE r1 r2 down" {
		t.Errorf("status: exit %d, the STORE column reads %q; want %q\nstdout %q\nstderr %q", code, got, "STORE r1 r2 down", out, errOut)
	}
	noURL(t, "status", out+errOut)

	_, out, errOut = runCLI(t, nil, cmd("status", "--json", "res")...)
	var rep statusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v: %q", err, out)
	}
	var names []string
	for _, s := range rep.Stores {
		names = append(names, s.Store)
	}
	if got := strings.Join(names, " "); got != "r1 r2 down" {
		t.Errorf("status --json: the stores are %q; want %q: %s", got, "r1 r2 down", out)
	}
	noURL(t, "status --json", out+errOut)

	code, out, errOut = runCLI(t, nil, cmd("release", "--force", "--yes", "res")...)
	for _, want := range []string{"\n  r1  was not held\n", "\n  r2  was not held\n", "\n  down  error: "} {
		if !strings.Contains(out, want) {
			t.Errorf("release --force --yes: exit %d, stdout %q; want a line %q", code, out, strings.TrimSpace(want))
		}
	}
	noURL(t, "release --force", out+errOut)

	code, out, errOut = runCLI(t, nil, "check", "--store", r1, "--workers", "2", "--duration", "100ms")
	if !strings.Contains(out, "\nstores: r1\n") {
		t.Errorf("check: exit %d, stdout %q; want the line %q", code, out, "stores: r1")
	}
	noURL(t, "check", out+errOut)
}
