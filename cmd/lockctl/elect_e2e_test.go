package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	if !strings.Contains(second.stderr.String(), `lockctl elect: the term for "leader" ended while the command ran`) {
		t.Errorf("stderr %q does not say the term was lost", second.stderr)
	}
	// --verbose speaks of an election's terms, not of locks.
	if want := `lockctl elect: elected for "leader" (term ttl 3s, fence `; !strings.Contains(first.stderr.String(), want) || strings.Contains(first.stderr.String()+second.stderr.String(), "lock on") || strings.Contains(first.stderr.String()+second.stderr.String(), "acquired") {
		t.Errorf("elect --verbose: stderr %q then %q; want %q…, and no \"acquired\" or \"lock on\"", first.stderr, second.stderr, want)
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

// elect passes signals on as run does, and a signal while campaigning
// ends the campaign with 128+n, the command never started; a command
// that cannot be found exits 127.
func TestElectSignalsAndStatuses(t *testing.T) {
	b := backends[0].start(t)
	s := newScene(t)
	elect := func(id string, opts ...string) *proc {
		env, argv := s.command(id, opts...)
		args := append(append([]string{"elect", "--verbose"}, b.flags()...), "leader", "--")
		return start(t, env, append(args, argv...)...)
	}
	leader := elect("leader", "WAIT=1")
	s.ready("leader")
	candidate := elect("candidate", "WAIT=1")
	candidate.stderr.waitFor(t, "campaigning", 30*time.Second)
	if err := candidate.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := candidate.wait(t, 30*time.Second); code != exitSignal+int(syscall.SIGTERM) || !strings.Contains(candidate.stderr.String(), `interrupted by SIGTERM while campaigning for "leader"`) {
		t.Errorf("elect interrupted while campaigning: exit %d, stderr %s; want %d", code, candidate.stderr, exitSignal+int(syscall.SIGTERM))
	}
	if s.started("candidate") {
		t.Error("the interrupted candidate started its command")
	}

	if err := leader.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the leader's command did not get SIGUSR1", func() bool {
		return slices.Contains(s.signals("leader"), "user defined signal 1")
	})
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := leader.wait(t, 30*time.Second); code != exitSignal+int(syscall.SIGTERM) {
		t.Errorf("elect whose command exits on SIGTERM: exit %d, stderr %s; want %d", code, leader.stderr, exitSignal+int(syscall.SIGTERM))
	}
	if sigs := s.signals("leader"); !slices.Equal(sigs, []string{"user defined signal 1", "terminated"}) {
		t.Errorf("the leader's command got %q; want SIGUSR1, then SIGTERM", sigs)
	}

	args := append(append([]string{"elect"}, b.flags()...), "leader", "--", "/nonexistent/command")
	if code, _, stderr := lockctl(t, nil, args...); code != exitNotFound || !strings.Contains(stderr, "cannot run /nonexistent/command") {
		t.Errorf("elect of a missing command: exit %d, stderr %q; want %d", code, stderr, exitNotFound)
	}

	// lockctl help exit-codes names elect for the statuses it gives.
	for _, status := range []string{"0", "76", "126/127", "128+n"} {
		if entry := exitStatusEntry(exitCodesHelp, status); !strings.Contains(entry, "elect") {
			t.Errorf("lockctl help exit-codes, status %s: %q; want it to name elect", status, entry)
		}
	}
}

// exitStatusEntry returns the text of status's entry in the table of
// lockctl help exit-codes, its continuation lines included.
func exitStatusEntry(table, status string) string {
	var entry []string
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			if len(entry) > 0 {
				return strings.Join(entry, " ")
			}
			if fields[0] == status {
				entry = fields[1:]
			}
		case len(entry) > 0:
			entry = append(entry, fields...)
		}
	}
	return strings.Join(entry, " ")
}

// A term found lost only when the leader resigns (taken by force while
// the command ran, the next renewal not yet due) exits with 76, as run
// does for a lock found lost by its release: the command may have run
// while another led.
func TestElectTermLostBeforeResigning(t *testing.T) {
	b := backends[0].start(t)
	s := newScene(t)
	env, argv := s.command("leader", "WAIT=1")
	args := append(append([]string{"elect", "--ttl", "30s"}, b.flags()...), "role", "--")
	p := start(t, env, append(args, argv...)...)
	s.ready("leader")
	if code, _, stderr := lockctl(t, nil, append(append([]string{"release", "--force", "--yes"}, b.flags()...), "role")...); code != 0 {
		t.Fatalf("release --force: exit %d, stderr %q", code, stderr)
	}
	s.finish("leader")
	if code := p.wait(t, 30*time.Second); code != exitLost || !strings.Contains(p.stderr.String(), "it may have run while another led") {
		t.Fatalf("elect whose term was taken before its command exited 0: exit %d, stderr %q; want %d, the term ended", code, p.stderr, exitLost)
	}
}
