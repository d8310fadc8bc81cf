package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// In helper mode, this test binary is the command that lockctl run runs.
// It records what happens to it in files of a directory shared with the
// test:
//
//	log          "start ID" and "end ID" lines, in order, of every helper
//	inside       exists while a helper runs: a second one finding it
//	             logs "overlap ID" and exits 99 (with HELPER_SLOTS,
//	             inside.ID, and more than SLOTS of them is an overlap)
//	ID.ready     written once started: its pid and the fence it was given
//	ID.child     with HELPER_CHILD=1: the pid of a process it started
//	ID.signals   the signals it got, one per line
//	ID.finish    created by the test to make it exit
//
// It is configured by environment variables:
//
//	HELPER_DIR, HELPER_ID   the directory and the helper's name
//	HELPER_WAIT=1           wait for ID.finish before exiting
//	HELPER_SLOTS=n          let up to n helpers (all with SLOTS) be inside at once
//	HELPER_EXIT=n           exit status (default 0)
//	HELPER_ON_TERM=ignore   keep running on SIGTERM (default: exit 143)
//	HELPER_SELF_KILL=1      kill itself with SIGKILL once ready
//	HELPER_FENCE_ENV=NAME   the variable holding the fence lockctl passed
//	HELPER_CHILD=1          start a child (sleep) that outlives it, before ready
//	HELPER_CHILD=ignore     the same, a child that ignores SIGTERM
const helperEnv = "LOCKCTL_TEST_HELPER"

func helperMain() int {
	dir, id := os.Getenv("HELPER_DIR"), os.Getenv("HELPER_ID")
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	appendLine := func(name, line string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(line + "\n")
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
		}
	}
	inside := filepath.Join(dir, "inside")
	if n, err := strconv.Atoi(os.Getenv("HELPER_SLOTS")); err == nil {
		// Up to n helpers inside at once: each marks itself, then counts.
		inside += "." + id
		if err := os.WriteFile(inside, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 98
		}
		if marks, _ := filepath.Glob(filepath.Join(dir, "inside*")); len(marks) > n {
			appendLine("log", "overlap "+id)
			os.Remove(inside)
			return 99
		}
	} else {
		f, err := os.OpenFile(inside, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			appendLine("log", "overlap "+id)
			return 99
		}
		f.Close()
	}
	appendLine("log", "start "+id)
	exit := func(code int) int {
		appendLine("log", "end "+id)
		os.Remove(inside)
		return code
	}
	fence := "-"
	if name := os.Getenv("HELPER_FENCE_ENV"); name != "" {
		fence = os.Getenv(name)
	}
	if c := os.Getenv("HELPER_CHILD"); c == "1" || c == "ignore" {
		child := exec.Command("sleep", "600")
		if c == "ignore" {
			// An ignored signal stays ignored across exec.
			child = exec.Command("sh", "-c", `trap "" TERM; exec sleep 600`)
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return exit(98)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".child"), fmt.Appendf(nil, "%d\n", child.Process.Pid), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return exit(98)
		}
	}
	ready := filepath.Join(dir, id+".ready")
	if err := os.WriteFile(ready+".tmp", fmt.Appendf(nil, "%d %s\n", os.Getpid(), fence), 0o644); err != nil || os.Rename(ready+".tmp", ready) != nil {
		fmt.Fprintln(os.Stderr, "helper: cannot write", ready)
		return exit(98)
	}
	if os.Getenv("HELPER_SELF_KILL") == "1" {
		exit(0)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	code, _ := strconv.Atoi(os.Getenv("HELPER_EXIT"))
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case sig := <-sigs:
			appendLine(id+".signals", sig.String())
			if sig == syscall.SIGTERM && os.Getenv("HELPER_ON_TERM") != "ignore" {
				return exit(128 + int(syscall.SIGTERM))
			}
		case <-tick.C:
			if os.Getenv("HELPER_WAIT") != "1" {
				return exit(code)
			}
			if _, err := os.Stat(filepath.Join(dir, id+".finish")); err == nil {
				return exit(code)
			}
		}
	}
}

// scene is the shared directory of the helpers of a test.
type scene struct {
	t   *testing.T
	dir string
}

func newScene(t *testing.T) *scene {
	s := &scene{t: t, dir: t.TempDir()}
	t.Cleanup(s.killAll)
	return s
}

// command returns the environment and the command line that make lockctl
// run a helper named id; opts are extra HELPER_ settings (WAIT=1, ...).
func (s *scene) command(id string, opts ...string) (env, argv []string) {
	self, err := os.Executable()
	if err != nil {
		s.t.Fatal(err)
	}
	env = []string{helperEnv + "=1", "HELPER_DIR=" + s.dir, "HELPER_ID=" + id}
	for _, o := range opts {
		env = append(env, "HELPER_"+o)
	}
	return env, []string{self}
}

// run starts lockctl run with flags on resource, running helper id.
func (s *scene) run(id string, flags []string, resource string, opts ...string) *proc {
	env, argv := s.command(id, opts...)
	args := append(append([]string{"run"}, flags...), resource, "--")
	return start(s.t, env, append(args, argv...)...)
}

// ready waits until helper id has started and returns its pid and fence.
func (s *scene) ready(id string) (pid int, fence string) {
	s.t.Helper()
	path := filepath.Join(s.dir, id+".ready")
	var data []byte
	eventually(s.t, 30*time.Second, "helper "+id+" did not start", func() bool {
		var err error
		data, err = os.ReadFile(path)
		return err == nil
	})
	if _, err := fmt.Sscan(string(data), &pid, &fence); err != nil {
		s.t.Fatalf("%s: %q: %v", path, data, err)
	}
	return pid, fence
}

// child returns the pid of the process that helper id, started with
// CHILD=1, started before it was ready.
func (s *scene) child(id string) int {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, id+".child"))
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || perr != nil {
		s.t.Fatalf("%s.child: %q, %v", id, data, errors.Join(err, perr))
	}
	return pid
}

// started reports whether helper id has started.
func (s *scene) started(id string) bool {
	_, err := os.Stat(filepath.Join(s.dir, id+".ready"))
	return err == nil
}

// finish tells helper id to exit.
func (s *scene) finish(id string) {
	if err := os.WriteFile(filepath.Join(s.dir, id+".finish"), nil, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// forget removes the mark that helper id, killed, left of being inside.
func (s *scene) forget(id string) {
	if err := os.Remove(filepath.Join(s.dir, "inside")); err != nil {
		s.t.Fatalf("helper %s left no mark of being inside: %v", id, err)
	}
}

// log returns the lines of the shared log.
func (s *scene) log() []string { return s.lines("log") }

// signals returns the signals helper id got.
func (s *scene) signals(id string) []string { return s.lines(id + ".signals") }

func (s *scene) lines(name string) []string {
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return nil
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// killAll kills every helper still running, so none outlives its test.
func (s *scene) killAll() {
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.ready"))
	for _, f := range files {
		var pid int
		if data, err := os.ReadFile(f); err == nil {
			if _, err := fmt.Sscan(string(data), &pid); err == nil && pid > 0 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
