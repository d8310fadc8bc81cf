// Package testserver starts real server processes (redis-server,
// memcached) as children of the test binary, on free loopback ports, and
// gives tests control over them: kill, pause, resume, restart.
//
// When a server binary is missing, tests skip with a message saying how to
// install it — unless the environment variable named by RequireEnv, or CI,
// is set, in which case they fail.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns a missing server
// into a test failure instead of a skip. The CI variable, which CI systems
// set, does the same.
const RequireEnv = "LOCKKIT_REQUIRE_SERVERS"

// Required reports whether missing servers must fail tests: RequireEnv or
// CI is set (to anything but "", "0" or "false").
func Required() bool { return isSet(RequireEnv) || isSet("CI") }

func isSet(name string) bool {
	switch os.Getenv(name) {
	case "", "0", "false":
		return false
	}
	return true
}

// LookPath returns the path of binary, or skips t (fails it when servers
// are required) with install instructions.
func LookPath(t testing.TB, binary, install string) string {
	t.Helper()
	path, err := exec.LookPath(binary)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found (%v); install it: %s", binary, err, install)
	if Required() {
		t.Fatalf("%s; %s or CI is set, so a missing server is a failure", msg, RequireEnv)
	}
	t.Skip(msg)
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is a server child process listening on a loopback port.
type Process struct {
	Name string   // for messages: "redis-server :6379"
	Path string   // binary
	Args []string // arguments, fixed for every (re)start
	Port int
	Dir  string // working directory (may be empty)

	mu     sync.Mutex
	cmd    *exec.Cmd
	waited chan struct{} // closed when cmd has been reaped
	out    *lockedBuffer
	paused bool
}

// Addr returns "127.0.0.1:port".
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

// Start starts a server process and waits until it accepts TCP connections
// on port. The process is killed when the test ends.
func Start(t testing.TB, name, path string, args []string, port int, dir string) *Process {
	t.Helper()
	p, err := Launch(name, path, args, port, dir)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// Launch is Start for a process that outlives any one test, such as a
// fixture shared by the tests of a package and started on first use: it is
// not tied to a test, and the caller must Kill it (from TestMain, after
// m.Run). It dies with the test binary all the same.
func Launch(name, path string, args []string, port int, dir string) (*Process, error) {
	p := &Process{Name: name, Path: path, Args: args, Port: port, Dir: dir}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir = p.Dir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the test binary, even if the binary is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	p.cmd, p.waited, p.out, p.paused = cmd, waited, out, false

	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.Addr(), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-waited:
			return fmt.Errorf("%s exited before accepting connections on %s:\n%s", p.Name, p.Addr(), out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-waited
			return fmt.Errorf("%s did not accept connections on %s within 15s:\n%s", p.Name, p.Addr(), out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill kills the process with SIGKILL and reaps it. Killing a dead process
// is a no-op.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process must run to die promptly
	_ = p.cmd.Process.Kill()
	<-p.waited
	p.cmd = nil
}

// Pause stops the process with SIGSTOP: it keeps its connections but
// answers nothing until Resume. The signal takes effect asynchronously, so
// on Linux Pause returns only once every thread of the process is stopped;
// a request sent after Pause returns is never served before Resume.
func (p *Process) Pause() error {
	if err := p.signal(syscall.SIGSTOP, true); err != nil {
		return err
	}
	return p.awaitStopped()
}

// awaitStopped waits until every thread of the process shows as stopped
// in /proc. Where /proc does not exist it returns at once.
func (p *Process) awaitStopped() error {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	dir := fmt.Sprintf("/proc/%d/task", pid)
	if _, err := os.Stat(dir); err != nil {
		return nil // no procfs: best effort
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		stopped, err := allStopped(dir)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not stop within 5s of SIGSTOP", p.Name)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether every thread listed in dir (/proc/PID/task)
// is in state T (stopped) or t (traced).
func allStopped(dir string) (bool, error) {
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(dir + "/" + task.Name() + "/stat")
		if err != nil {
			return false, nil // a thread that just exited: look again
		}
		// pid (comm) state ...: the state follows the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("unexpected %s/%s/stat: %q", dir, task.Name(), stat)
		}
		if st := stat[i+2]; st != 'T' && st != 't' {
			return false, nil
		}
	}
	return true, nil
}

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT, false) }

func (p *Process) signal(sig syscall.Signal, paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	p.paused = paused
	return nil
}

// Restart kills the process if it runs and starts it again with the same
// arguments on the same port.
func (p *Process) Restart() error {
	p.Kill()
	var err error
	for range 3 { // the port may linger briefly after a kill
		if err = p.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Running reports whether the process is running (paused counts).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.waited:
		return false
	default:
		return true
	}
}

// Output returns what the process has written so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

// Run runs a command to completion with a timeout and returns its
// combined output, for admin tools such as redis-cli.
func Run(ctx context.Context, timeout time.Duration, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) || ctx.Err() != nil {
			return string(out), fmt.Errorf("%s %v: %w\n%s", path, args, err, out)
		}
		return string(out), err
	}
	return string(out), nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep the last output bounded
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
