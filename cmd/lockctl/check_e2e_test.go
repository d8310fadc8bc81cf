package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// check passes on every real store and fails, with status 3, on a store
// that does not keep mutual exclusion.
func TestCheck(t *testing.T) {
	run := func(t *testing.T, flags ...string) (int, checkReport, string) {
		t.Helper()
		args := append([]string{"check", "--json", "--workers", "4", "--duration", "1s"}, flags...)
		code, stdout, stderr := lockctl(t, nil, args...)
		var rep checkReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("lockctl %q: exit %d, %v; stdout %q, stderr %q", args, code, err, stdout, stderr)
		}
		return code, rep, stderr
	}
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		code, rep, stderr := run(t, "--store", "broken-memory://")
		if code != exitUnsafe || rep.OK || rep.Violations == 0 || !strings.Contains(rep.Problem, "mutual-exclusion violations") {
			t.Errorf("check of a store that takes held locks: exit %d, %+v, stderr %q; want %d and violations", code, rep, stderr, exitUnsafe)
		}
		code, stdout, _ := lockctl(t, nil, "check", "--workers", "4", "--duration", "500ms", "--store", "broken-memory://")
		if code != exitUnsafe || !strings.Contains(stdout, "\nFAIL: ") {
			t.Errorf("check of a broken store: exit %d, stdout %q; want FAIL", code, stdout)
		}
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := lockctl(t, nil, "check", "--workers", "4", "--duration", "1s")
		if code != 0 || !strings.Contains(stdout, "stores: memory://") || !strings.Contains(stdout, "\nPASS: ") {
			t.Errorf("check with no store: exit %d, stdout %q, stderr %q; want PASS on memory://", code, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, "\x1b") {
			t.Errorf("check, not on a terminal, wrote escape sequences: %q", stdout+stderr)
		}
	})
	eachBackend(t, func(t *testing.T, b backend) {
		code, rep, stderr := run(t, b.flags()...)
		if code != 0 || !rep.OK || rep.Acquisitions == 0 || rep.Writes == 0 || rep.Violations != 0 || rep.LostUpdates != 0 || len(rep.Stores) != len(b.urls) {
			t.Errorf("check: exit %d, %+v, stderr %q; want a pass with acquisitions", code, rep, stderr)
		}
	})
}

func TestBench(t *testing.T) {
	be := backends[0].start(t)
	for _, flags := range [][]string{nil, be.flags()} {
		args := append([]string{"bench", "--json", "--workers", "4", "--duration", "300ms"}, flags...)
		code, stdout, stderr := lockctl(t, nil, args...)
		var rep benchReport
		if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil {
			t.Fatalf("lockctl %q: exit %d, %v; stdout %q, stderr %q", args, code, err, stdout, stderr)
		}
		if rep.Pairs == 0 || rep.Errors != 0 || rep.PairsPerSec <= 0 || rep.Lock.P50 <= 0 || rep.Pair.Max < rep.Pair.P99 {
			t.Errorf("lockctl %q = %+v; want pairs, no error, consistent latencies", args, rep)
		}
	}
	code, stdout, _ := lockctl(t, nil, "bench", "--workers", "2", "--duration", "100ms")
	if code != 0 || !strings.Contains(stdout, "lock+unlock") || !strings.Contains(stdout, "pairs/s") {
		t.Errorf("bench: exit %d, stdout %q; want a table", code, stdout)
	}
}

// A --ttl the stores cannot honour is a usage error that names --ttl
// once, before any worker starts: it used to surface as each worker's
// failure ("contention: client N: ..."), or for a huge TTL as an
// overflowed internal timeout.
func TestCheckRefusesTTLBeforeWorkersStart(t *testing.T) {
	mc := backends[1].start(t)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--ttl", "1ms"}, "lockctl check: --ttl 1ms: "},
		{[]string{"--ttl", "2000000h"}, "lockctl check: --ttl 2000000h0m0s: "},
		{append([]string{"--ttl", "1s"}, mc.flags()...), "lockctl check: --ttl 1s: "}, // memcached's TTLs are whole seconds
	} {
		args := append([]string{"check", "--workers", "4", "--duration", "1s"}, tc.args...)
		code, stdout, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tc.err) || strings.Contains(stderr, "contention") || stdout != "" {
			t.Errorf("lockctl %q = exit %d, stdout %q, stderr %q; want %d and an error starting %q, before the workers start", args, code, stdout, stderr, exitUsage, tc.err)
		}
	}
}

// A --hold not shorter than the lock's validity is a usage error, before
// the workers start: every holder's lock would run out before it writes,
// and check said PASS having checked no write.
func TestCheckRefusesHoldBeyondValidity(t *testing.T) {
	for _, hold := range []string{"20ms", "10ms", "9900us"} {
		args := []string{"check", "--workers", "4", "--duration", "1s", "--ttl", "10ms", "--hold", hold}
		code, stdout, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.HasPrefix(stderr, "lockctl check: --hold ") || !strings.Contains(stderr, "validity") || stdout != "" {
			t.Errorf("lockctl %q = exit %d, stdout %q, stderr %q; want %d and an error naming --hold and the validity", args, code, stdout, stderr, exitUsage)
		}
	}
}

// bench refuses a TTL that the stores cannot honour with status 2, as
// check does, before its workers start: it does not spend --duration
// failing every call and then exit 1.
func TestBenchRefusesTTLBeforeWorkersStart(t *testing.T) {
	mc := backends[1].start(t)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--ttl", "1ms"}, "lockctl bench: --ttl 1ms: "},
		{append([]string{"--ttl", "1s"}, mc.flags()...), "lockctl bench: --ttl 1s: "}, // memcached's TTLs are whole seconds
	} {
		args := append([]string{"bench", "--workers", "2", "--duration", "1s"}, tc.args...)
		code, stdout, stderr := lockctl(t, nil, args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tc.err) || stdout != "" {
			t.Errorf("lockctl %q = exit %d, stdout %q, stderr %q; want %d and an error starting %q, before the workers start", args, code, stdout, stderr, exitUsage, tc.err)
		}
	}
}

// check and bench leave nothing on Redis but the server's fence counter,
// which every lock on it shares, as their help says.
func TestCheckAndBenchLeaveOnlyTheFenceCounter(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	for _, args := range [][]string{
		{"check", "--workers", "4", "--resources", "3", "--duration", "300ms"},
		{"bench", "--workers", "4", "--duration", "300ms"},
	} {
		args = append(args, "--store", "redis://"+srv.Addr())
		if code, stdout, stderr := lockctl(t, nil, args...); code != 0 {
			t.Fatalf("lockctl %q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
		keys, err := client.Do(context.Background(), client.B().Keys().Pattern("*").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys, []string{"lockkit:fence"}) {
			t.Errorf("keys left by lockctl %s = %q; want only the fence counter lockkit:fence", args[0], keys)
		}
	}
}

// Interrupted, check stops early and prints the summary of what ran: an
// operator's Ctrl-C is not a failure.
func TestCheckInterrupted(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	p := start(t, nil, "check", "--json", "--workers", "1", "--duration", "10m", "--store", "redis://"+srv.Addr())
	// The probe of --ttl draws the first fence before the workers start;
	// two more mean the worker has taken a lock and taken the next.
	fence := func() string {
		v, _ := client.Do(context.Background(), client.B().Get().Key("lockkit:fence").Build()).ToString()
		return v
	}
	last := ""
	for range 3 {
		eventually(t, 30*time.Second, "the fence counter did not move: check took no lock", func() bool {
			v := fence()
			return v != "" && v != last
		})
		last = fence()
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, time.Minute)
	var rep checkReport
	if err := json.Unmarshal([]byte(p.stdout.String()), &rep); err != nil || code != 0 || !rep.OK || rep.Acquisitions == 0 || rep.ElapsedMs >= ms(10*time.Minute) {
		t.Errorf("check interrupted by SIGINT: exit %d, %v, stdout %q, stderr %q; want 0 and the summary of what ran", code, err, p.stdout, p.stderr)
	}
}

// check takes its stores from $LOCKCTL_STORES when no --store is given,
// and checks memory:// only when neither is.
func TestCheckStoresFromEnvironment(t *testing.T) {
	code, stdout, stderr := lockctl(t, []string{storesEnv + "=broken-memory://"}, "check", "--workers", "4", "--duration", "300ms")
	if code != exitUnsafe || !strings.Contains(stdout, "stores: broken-memory://\n") {
		t.Errorf("check with $%s=broken-memory://: exit %d, stdout %q, stderr %q; want %d on broken-memory://", storesEnv, code, stdout, stderr, exitUnsafe)
	}
}

// check exits 1, saying why, when no lock could be taken: here a Redis
// server that refuses every write (out of memory).
func TestCheckNoLockTaken(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	ctx := context.Background()
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
		if err := client.Do(ctx, client.B().ConfigSet().ParameterValue().ParameterValue(kv[0], kv[1]).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := lockctl(t, nil, "check", "--workers", "2", "--duration", "300ms", "--ttl", "1s", "--store", "redis://"+srv.Addr())
	if code != exitFailure || !strings.Contains(stdout, "\nFAIL: no lock was acquired: ") || !strings.Contains(stdout, "OOM") {
		t.Errorf("check on a server refusing writes: exit %d, stdout %q, stderr %q; want %d and FAIL: no lock was acquired, with the store's error", code, stdout, stderr, exitFailure)
	}
}
