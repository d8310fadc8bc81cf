package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// runCLI runs lockctl in this process with env as its environment and
// stdin from /dev/null, and returns its exit status and output.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var out, errOut bytes.Buffer
	a := &app{stdin: null, stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	code = a.main(context.Background(), args)
	return code, out.String(), errOut.String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string // substrings of stdout and stderr
		errMissing string // a substring stderr must not have
	}{
		{args: nil, code: exitUsage, err: "Commands: run, elect, acquire, extend, release, status, check, bench, completion\nRun 'lockctl help' for details.\n"},
		{args: []string{"--verison"}, code: exitUsage, err: "lockctl: unknown command \"--verison\"\nUsage: lockctl COMMAND"},
		{args: []string{"help"}, code: exitOK, out: "cmd/lockctl@latest check"},
		{args: []string{"--version"}, code: exitOK, out: "lockctl (devel), built from a source tree"},
		{args: []string{"help", "completion"}, code: exitOK, out: "source <(lockctl completion bash)"},
		{args: []string{"--help"}, code: exitOK, out: "Exit status:"},
		{args: []string{"help", "stores"}, code: exitOK, out: "redis+sentinel://"},
		{args: []string{"help", "run"}, code: exitOK, out: "Examples:"},
		{args: []string{"help", "nope"}, code: exitUsage, err: `no command or topic "nope"`},
		{args: []string{"help", "stores", "extra"}, code: exitUsage, err: `one command or topic at a time, not "stores extra"`},
		{args: []string{"frobnicate"}, code: exitUsage, err: `unknown command "frobnicate"`},
		{args: []string{"status", "--help"}, code: exitOK, out: "--json"},
		{args: []string{"run", "-h"}, code: exitOK, out: "--fence-env NAME"},
		{args: []string{"run", "--bogus"}, code: exitUsage, err: "flag provided but not defined: -bogus"},
		{args: []string{"run", "--store", "memory://", "res"}, code: exitUsage, err: `missing COMMAND after RESOURCE "res"`},
		{args: []string{"run", "--store", "memory://", "res", "--ttl", "1s", "true"}, code: exitUsage, err: "flags go before RESOURCE"},
		{args: []string{"run", "--ttl", "0s", "res", "true"}, code: exitUsage, err: "--ttl 0s"},
		{args: []string{"run", "res", "true"}, code: exitUsage, err: "no store: give --store URL, or set $LOCKCTL_STORES"},
		{args: []string{"run", "--wait", "soon", "res", "true"}, code: exitUsage, err: "invalid value \"soon\" for flag -wait"},
		{args: []string{"acquire", "--ttl", "5", "res"}, code: exitUsage, err: "invalid value \"5\" for flag -ttl: want a duration with a unit, such as 500ms, 30s, 5m or 1h30m"},
		{args: []string{"run", "--store", "memory://", "--quorum", "2", "res", "true"}, code: exitUsage, err: "--quorum 2 with one store: want 1"},
		{args: []string{"run", "--store", "memory://", "--quorum", "most", "res", "true"}, code: exitUsage, err: `--quorum "most"`},
		// With one store, a quorum that means it (all, 1) is taken: a
		// script that always passes --quorum works with one store.
		{args: []string{"run", "--store", "memory://", "--quorum", "all", "res", "true"}, code: exitOK},
		{args: []string{"run", "--store", "memory://", "--quorum", "1", "res", "true"}, code: exitOK},
		{args: []string{"run", "--store", "memory://a", "--store", "memory://b", "--quorum", "1", "res", "true"}, code: exitUsage, err: "want more than half"},
		{args: []string{"run", "--store", "memory://", "--store", "memory://", "res", "true"}, code: exitUsage, err: "given twice"},
		{args: []string{"run", "--store", "memory://", "--fence-env", "A=B", "res", "true"}, code: exitUsage, err: "not an environment variable name"},
		{args: []string{"run", "--store", "memory://a", "--store", "memory://b", "--store", "memory://c", "--fence-env", "F", "res", "true"}, code: exitOK, err: "memory:// locks exist only inside"},
		{args: []string{"status", "--store", "memory://"}, code: exitUsage, err: "want one RESOURCE, got 0"},
		{args: []string{"status", "--store", "redis://h:x", "r"}, code: exitUsage, err: `store redis://h:x: port: "x"`},
		{args: []string{"release", "--store", "memory://", "r"}, code: exitUsage, err: "release needs --lock FILE (a lock taken by acquire) or --force RESOURCE"},
		{args: []string{"release", "--lock", "f", "--force", "r"}, code: exitUsage, err: "--force and --yes are for releasing a lock whoever holds it"},
		{args: []string{"release", "--lock", "f", "r"}, code: exitUsage, err: `unexpected argument "r": the resource is in the lock file`},
		{args: []string{"release", "--lock", "f", "--shared"}, code: exitUsage, err: "and so are -n, --shared and --exclusive"},
		{args: []string{"release", "--force", "--yes", "--store", "memory://", "--shared", "--exclusive", "r"}, code: exitUsage, err: "--shared and --exclusive: give one of them"},
		{args: []string{"acquire", "--store", "memory://"}, code: exitUsage, err: "want one RESOURCE, got 0"},
		{args: []string{"acquire", "--store", "memory://", "r"}, code: exitUsage, err: "memory:// locks end with this lockctl process"},
		{args: []string{"acquire", "--ttl", "0s", "r"}, code: exitUsage, err: "--ttl 0s: want a positive duration"},
		{args: []string{"acquire", "--conflict-exit-code", "300", "r"}, code: exitUsage, err: "--conflict-exit-code 300"},
		{args: []string{"extend", "--store", "memory://"}, code: exitUsage, err: "extend needs --lock FILE"},
		{args: []string{"extend", "--lock", "-", "--ttl", "-1s"}, code: exitUsage, err: "--ttl -1s"},
		{args: []string{"extend", "--store", "memory://", "--lock", "-"}, code: exitUsage, err: "stdin does not hold a lock as lockctl acquire writes it"},
		{args: []string{"completion"}, code: exitUsage, err: "want one SHELL: bash, zsh or fish"},
		{args: []string{"completion", "tcsh"}, code: exitUsage, err: `"tcsh": want bash, zsh or fish`},
		{args: []string{"release", "--force", "--store", "memory://", "r"}, code: exitUsage, err: "stdin is not a terminal"},
		{args: []string{"check", "--workers", "0"}, code: exitUsage, err: "--workers 0"},
		{args: []string{"check", "extra"}, code: exitUsage, err: `unexpected argument "extra"`},
		{args: []string{"bench", "--duration", "-1s"}, code: exitUsage, err: "--duration -1s"},
		{args: []string{"check", "--store", "redis://u:hunter2@h:1?x=y"}, code: exitUsage, err: "redis://u:xxxxx@h:1?x=y", errMissing: "hunter2"},
	} {
		code, out, errOut := runCLI(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) ||
			(tc.errMissing != "" && strings.Contains(errOut+out, tc.errMissing)) {
			t.Errorf("lockctl %q: exit %d, stdout %.200q..., stderr %q\nwant exit %d, stdout with %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
		// A usage error is short: the error, the synopsis, where to look.
		if code == exitUsage && len(tc.args) > 0 && lookup(tc.args[0]) != nil {
			if !strings.Contains(errOut, "Usage: lockctl "+tc.args[0]) || !strings.HasSuffix(errOut, "Run 'lockctl help "+tc.args[0]+"' for its flags and examples.\n") {
				t.Errorf("lockctl %q: a usage error without the command's synopsis: %q", tc.args, errOut)
			}
			if strings.Contains(errOut, "Flags:") || strings.Count(errOut, "\n") > 4 {
				t.Errorf("lockctl %q: a usage error of %d lines, with the flags: %q", tc.args, strings.Count(errOut, "\n"), errOut)
			}
		}
	}
}

// An unreachable store names its address and the cause, and exits 1; a
// password in its URL is never shown.
func TestUnreachableStore(t *testing.T) {
	addr := closedPort(t)
	for _, url := range []string{"redis://u:hunter2@" + addr, "memcache://" + addr} {
		code, _, errOut := runCLI(t, nil, "status", "--store", url, "r")
		if code != exitFailure || !strings.Contains(errOut, addr) || !strings.Contains(errOut, "connection refused") || strings.Contains(errOut, "hunter2") {
			t.Errorf("status --store %s: exit %d, stderr %q; want 1, naming %s and the refused connection, without the password", url, code, errOut, addr)
		}
	}
	// The same through $LOCKCTL_STORES.
	code, _, errOut := runCLI(t, map[string]string{storesEnv: "redis://:hunter2@" + addr}, "status", "r")
	if code != exitFailure || !strings.Contains(errOut, addr) || strings.Contains(errOut, "hunter2") {
		t.Errorf("status with $%s: exit %d, stderr %q", storesEnv, code, errOut)
	}
	// A Redlock whose unreachable stores leave too few for the quorum.
	addr2 := closedPort(t)
	code, _, errOut = runCLI(t, nil, "run", "--store", "memory://", "--store", "redis://"+addr, "--store", "redis://"+addr2, "r", "true")
	if code != exitFailure || !strings.Contains(errOut, "only 1 of 3 stores reachable") || !strings.Contains(errOut, addr2) {
		t.Errorf("run over a Redlock with 2 of 3 stores down: exit %d, stderr %q", code, errOut)
	}
}

func TestEnvironmentStores(t *testing.T) {
	// Spaces and newlines separate the URLs; commas belong to host lists.
	env := map[string]string{storesEnv: " memory://a\nmemory://b  memory://c "}
	code, out, errOut := runCLI(t, env, "status", "--json", "r")
	if code != exitOK || strings.Count(out, `"store"`) != 3 {
		t.Fatalf("status with three stores in $%s: exit %d, stdout %q, stderr %q", storesEnv, code, out, errOut)
	}
	// --store replaces the environment.
	code, out, _ = runCLI(t, env, "status", "--json", "--store", "memory://z", "r")
	if code != exitOK || strings.Count(out, `"store"`) != 1 || !strings.Contains(out, "memory://z") {
		t.Fatalf("status --store with $%s set: exit %d, stdout %q", storesEnv, code, out)
	}
	code, _, errOut = runCLI(t, map[string]string{storesEnv: "memory:// redis://h:x"}, "status", "r")
	if code != exitUsage || !strings.Contains(errOut, "$"+storesEnv+": store redis://h:x: port") {
		t.Fatalf("a bad URL in $%s: exit %d, stderr %q; want it named", storesEnv, code, errOut)
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// Output that cannot be written is an error: 141, quietly, when the
// reader went away (EPIPE), as for status; else 1, saying why.
func TestOutputWriteErrors(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, args := range [][]string{
		{"help"},
		{"help", "exit-codes"},
		{"release", "--help"},
		{"--version"},
		{"bench", "--store", "memory://", "--workers", "1", "--duration", "10ms"},
		{"release", "--force", "--yes", "--store", "memory://", "r"},
	} {
		for _, tc := range []struct {
			err  error
			code int
			said string
		}{
			{syscall.EPIPE, exitSignal + int(syscall.SIGPIPE), ""},
			{syscall.ENOSPC, exitFailure, "no space left on device"},
		} {
			var errOut bytes.Buffer
			a := &app{stdin: null, stdout: failingWriter{tc.err}, stderr: &errOut, getenv: func(string) string { return "" }}
			code := a.main(context.Background(), args)
			if code != tc.code || tc.said == "" && errOut.Len() != 0 || !strings.Contains(errOut.String(), tc.said) {
				t.Errorf("%q with stdout failing with %v: exit %d, stderr %q; want %d, saying %q", args, tc.err, code, errOut.String(), tc.code, tc.said)
			}
		}
	}
}
