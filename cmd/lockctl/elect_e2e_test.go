package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two lockctl elect on one role: the second runs its command only once
// the first's command exits and it resigns; a term ended by force stops
// the leader's command.
func TestElect(t *testing.T) {
	// The library's election runs on every store; one Redis server is
	// enough here.
	if backends[0].name != "redis" {
		t.Fatalf("backends[0] is %s; want redis", backends[0].name)
	}
	b := backends[0].start(t)
	s := newScene(t)
	elect := func(id string, flags []string, opts ...string) *proc {
		env, argv := s.command(id, opts...)
		args := append(append(append([]string{"elect", "--ttl", "3s", "--verbose"}, b.flags()...), flags...), "leader", "--")
		return start(t, env, append(args, argv...)...)
	}
	first := elect("first", nil, "WAIT=1")
	s.ready("first")
	// status names the leader: its host and lockctl's pid.
	host, _ := os.Hostname()
	code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, b.flags()...), "leader")...)
	var st statusReport
	if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
	}
	if want := host + " " + strconv.Itoa(first.cmd.Process.Pid) + " "; st.Holder == nil || !strings.HasPrefix(*st.Holder, want) {
		t.Errorf("status --json while the first leads: holder %s; want %q…", stdout, want)
	}
	second := elect("second", nil, "WAIT=1")
	second.stderr.waitFor(t, "campaigning", 30*time.Second)
	renewals(t, b, "leader", 2) // the second must stay out across them
	if s.started("second") {
		t.Fatal("the second candidate's command started while the first led")
	}
	s.finish("first")
	if code := first.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("first elect: exit %d; stderr %s", code, first.stderr)
	}
	s.ready("second")
	if log, want := s.log(), []string{"start first", "end first", "start second"}; !slices.Equal(log, want) {
		t.Fatalf("log = %q; want %q", log, want)
	}

	// The role is taken from the leader: its command is stopped.
	code, _, stderr = lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "leader")...)
	if code != 0 {
		t.Fatalf("release --force: exit %d, stderr %q", code, stderr)
	}
	if code := second.wait(t, 30*time.Second); code != exitLost {
		t.Fatalf("elect whose term was taken: exit %d; want %d; stderr %s", code, exitLost, second.stderr)
	}
	if sigs := s.signals("second"); !slices.Equal(sigs, []string{"terminated"}) {
		t.Errorf("the leader's command got %q; want SIGTERM", sigs)
	}
	if !strings.Contains(second.stderr.String(), `lockctl elect: lost the lock on "leader"`) {
		t.Errorf("stderr %q does not say the term was lost", second.stderr)
	}
}

// renewals returns once the lock on resource has been extended n times,
// as status sees it: its TTL left grew between two readings.
func renewals(t *testing.T, b backend, resource string, n int) {
	t.Helper()
	last := int64(-1)
	eventually(t, 30*time.Second, fmt.Sprintf("%q: %d renewals", resource, n), func() bool {
		code, stdout, stderr := lockctl(t, nil, append(append([]string{"status", "--json"}, b.flags()...), resource)...)
		var st statusReport
		if err := json.Unmarshal([]byte(stdout), &st); code != 0 || err != nil || len(st.Stores) != 1 || st.Stores[0].TTLMillis == nil {
			t.Fatalf("status --json %s: exit %d, %v; stdout %q, stderr %q", resource, code, err, stdout, stderr)
		}
		ttl := *st.Stores[0].TTLMillis
		if last >= 0 && ttl > last {
			n--
		}
		last = ttl
		return n <= 0
	})
}

func TestElectExitStatus(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "elect", "--store", "memory://", "r", "--", "sh", "-c", "exit 3")
	if code != 3 {
		t.Errorf("elect of a command exiting 3: exit %d; want 3; stderr %q", code, stderr)
	}
}

func TestElectUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"elect", "--store", "memory://"}, "missing ROLE and COMMAND"},
		{[]string{"elect", "--store", "memory://", "r"}, `missing COMMAND after ROLE "r"`},
		{[]string{"elect", "--store", "memory://", "r", "--ttl", "1s", "true"}, "flags go before ROLE"},
		{[]string{"elect", "--store", "memory://", "--ttl", "0s", "r", "true"}, "ttl"},
	} {
		code, _, stderr := runCLI(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockctl %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}
