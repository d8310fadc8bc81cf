package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
)

// The end-to-end tests build lockctl once, with the test-only broken store
// (-tags lockctl_broken) and, when the tests run with the race detector,
// with it too; then they run the binary against real servers. The command
// that run runs is this test binary in helper mode (see helper_test.go).

// bin is the lockctl binary under test.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	dir, err := os.MkdirTemp("", "lockctl-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "lockctl")
	if err := build(bin); err != nil {
		fmt.Fprintf(os.Stderr, "building lockctl: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	redistest.CloseShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds lockctl into path, within a few minutes.
func build(path string) error {
	// go test puts its own GOROOT/bin first on the PATH of the tests.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building lockctl for the tests: %w", err)
	}
	args := []string{"build", "-tags", "lockctl_broken", "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, append(args, ".")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// baseEnv is the environment of every lockctl the tests run: the test's
// own, without stores a developer may have set.
// A race-enabled binary waits a second before exiting, for late reports:
// not these, whose exit statuses (66 on a race) the tests check.
func baseEnv() []string {
	race := "GORACE=atexit_sleep_ms=0"
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GORACE="):
			race = kv + " atexit_sleep_ms=0"
		case !strings.HasPrefix(kv, storesEnv+"=") && !strings.HasPrefix(kv, "HELPER_") && !strings.HasPrefix(kv, helperEnv+"="):
			env = append(env, kv)
		}
	}
	return append(env, race)
}

// proc is a lockctl process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *output
	done           chan struct{}
}

// start starts lockctl with args and extra environment variables. It is
// killed, if still running, when the test ends.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startIn(t, nil, env, args...)
}

// startIn is start with stdin (nil: /dev/null).
func startIn(t *testing.T, stdin io.Reader, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), stdout: newOutput(), stderr: newOutput(), done: make(chan struct{})}
	p.cmd.Env = append(baseEnv(), env...)
	p.cmd.Stdin = stdin
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting lockctl %q: %v", args, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for lockctl to exit, for at most within, and returns its exit
// status (128+n if a signal killed it).
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("lockctl %q still ran after %v; stderr: %s", p.cmd.Args[1:], within, p.stderr)
	}
	ps := p.cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lockctl runs lockctl to completion (at most a minute) and returns its
// exit status and output.
func lockctl(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := start(t, env, args...)
	code = p.wait(t, time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// lockctlIn is lockctl with stdin.
func lockctlIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startIn(t, strings.NewReader(stdin), nil, args...)
	code = p.wait(t, time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// output collects what a process writes, and lets a test wait for a line.
type output struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.changed)
	o.changed = make(chan struct{})
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// waitFor waits until the output holds s, for at most within.
func (o *output) waitFor(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		o.mu.Lock()
		found, changed := strings.Contains(o.b.String(), s), o.changed
		o.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %q in the output after %v; output: %s", s, within, o)
		}
	}
}

// eventually polls cond every 5ms until it holds, for at most within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		_, noProc := os.Stat("/proc/self")
		return noProc != nil || !os.IsNotExist(err) // without /proc, a zombie counts as alive
	}
	// The state follows the command name in parentheses: Z is a zombie.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
