package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const hasDeathSignal = true

// A process group whose only process left is a zombie (an orphan that
// PID 1 does not reap, say) is not alive: after a loss, lockctl would
// otherwise wait out --kill-after for processes that have exited.
func TestGroupOfZombiesIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Wait() })
	eventually(t, 10*time.Second, "the unwaited process never became a zombie", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z")
	})
	if syscall.Kill(-pid, 0) != nil {
		t.Fatalf("kill(-%d, 0) failed: the zombie's group should still exist", pid)
	}
	if groupAlive(pid) {
		t.Errorf("groupAlive(%d) = true for a group whose only process is a zombie; want false", pid)
	}
	if alive, known := groupRunning(syscall.Getpgrp()); !alive || !known {
		t.Errorf("groupRunning(the test's own group) = %v, %v; want true, true", alive, known)
	}
}
