package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On Linux what the command started dies with lockctl too, when the
// command has a process group of its own (lockctl is not on a terminal):
// it would run on without the lock. When the command exits normally, what
// it left behind is left alone.
func TestRunCommandGroupDiesWithLockctl(t *testing.T) {
	be := backends[0].start(t)
	s := newScene(t)
	p := s.run("killed", be.flags(), "group", "WAIT=1", "CHILD=1")
	s.ready("killed")
	killedChild := s.child("killed")
	if n := len(reapersOf(t, p.cmd.Process.Pid)); n != 1 {
		t.Fatalf("%d reapers of lockctl while its command runs; want 1", n)
	}
	t.Cleanup(func() { _ = syscall.Kill(killedChild, syscall.SIGKILL) })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 30*time.Second)
	eventually(t, 10*time.Second, "the command's child outlived lockctl", func() bool { return !alive(killedChild) })

	s = newScene(t) // the killed helper left its mark inside
	p = s.run("exits", be.flags(), "group2", "CHILD=1")
	s.ready("exits")
	leftChild := s.child("exits")
	t.Cleanup(func() { _ = syscall.Kill(leftChild, syscall.SIGKILL) })
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run whose command left a child behind: exit %d; stderr %s", code, p.stderr)
	}
	// A reaper left running would kill the group as it goes.
	eventually(t, 10*time.Second, "lockctl's reaper outlived it", func() bool { return len(reapersOf(t, p.cmd.Process.Pid)) == 0 })
	if !alive(leftChild) {
		t.Errorf("the child a command left behind died when lockctl exited; want it left alone")
	}
}

// reapersOf returns the pids of the live reapers that lockctl parent
// started (see startReaper).
func reapersOf(t *testing.T, parent int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err == nil && strings.Contains("\x00"+string(env), fmt.Sprintf("\x00%s=%d:", reaperEnv, parent)) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
