package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal makes the kernel kill the command if lockctl dies: its
// lock would no longer be extended.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// reaperEnv, set to "PARENT:GROUP", makes lockctl the reaper of a
// command's process group (see startReaper) instead of itself.
const reaperEnv = "LOCKCTL_REAPER"

// startReaper starts a process that kills the process group pgid, the
// command's, if lockctl dies (kill -9, OOM) before it calls stop: the
// kernel kills the command itself then (setDeathSignal), but not what the
// command started, which would run on without the lock. It must be called
// on the OS thread that started the command and that stays locked until
// stop: the kernel ties the death signal to that thread. stop kills the
// reaper, so that processes the command leaves behind when it exits are
// left alone, as they always were. If the reaper cannot start, warn is
// told why and stop does nothing.
func startReaper(pgid int, warn func(error)) (stop func()) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"lockctl-reaper"}
	cmd.Env = []string{fmt.Sprintf("%s=%d:%d", reaperEnv, os.Getpid(), pgid)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: reaperSignal}
	if err := cmd.Start(); err != nil {
		warn(fmt.Errorf("what the command starts may outlive lockctl if it is killed: %w", err))
		return func() {}
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// reaperSignal is the reaper's death signal. Its default action is to do
// nothing, so that one arriving before the reaper listens for it does not
// kill the reaper: the reaper then finds its parent gone when it looks.
const reaperSignal = syscall.SIGWINCH

// reap is the reaper's main: it waits until its parent, lockctl, is gone,
// and then kills the process group. A death signal sent by anyone else (a
// terminal resized) is told apart by the parent still being there; the
// signals meant for lockctl or its whole group (Ctrl-C, a service manager
// stopping everything) are ignored: lockctl kills the reaper on its way
// out.
func reap(spec string) int {
	var parent, pgid int
	if _, err := fmt.Sscanf(spec, "%d:%d", &parent, &pgid); err != nil || pgid <= 1 {
		fmt.Fprintf(os.Stderr, "lockctl-reaper: bad %s %q\n", reaperEnv, spec)
		return exitUsage
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGPIPE)
	died := make(chan os.Signal, 1)
	signal.Notify(died, reaperSignal)
	// lockctl may have died before the death signal was armed, or before
	// the reaper listened for it.
	for os.Getppid() == parent {
		<-died
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return exitOK
}

// reaperMain runs the reaper if lockctl was started as one: it reports
// whether it was, and the exit status.
func reaperMain() (code int, ok bool) {
	spec, ok := os.LookupEnv(reaperEnv)
	if !ok {
		return 0, false
	}
	return reap(spec), true
}

// groupRunning reports whether a process of the process group pgid is
// left that is not a zombie, from /proc; known is false if /proc cannot
// be read.
func groupRunning(pgid int) (alive, known bool) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return false, false
	}
	for _, name := range stats {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields count from the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if state := f[0]; state != "Z" && state != "X" {
			return true, true
		}
	}
	return false, true
}
