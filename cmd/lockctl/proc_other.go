//go:build !unix

package main

import (
	"errors"
	"os"
	"syscall"
)

var forwardedSignals = []os.Signal{os.Interrupt}

func terminalSignal(os.Signal) bool { return false }

// groupAlive reports false: the command has no process group of its own
// here.
func groupAlive(int) bool { return false }

func childAttr(bool) *syscall.SysProcAttr { return nil }

func signalChild(pid int, _ bool, sig os.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if sig == sigKILL {
		return p.Kill()
	}
	return errors.New("lockctl: signals other than kill are not supported on this system")
}

func catchBrokenPipes() {}

func ignoreStop() {}

func signalNumber(os.Signal) int { return 0 }

func signalName(sig os.Signal) string { return sig.String() }

func waitSignal(*os.ProcessState) (os.Signal, bool) { return nil, false }

var (
	sigTERM os.Signal = os.Kill
	sigKILL os.Signal = os.Kill
)

// startReaper does nothing: without a death signal nothing can tell that
// lockctl died.
func startReaper(int, func(error)) (stop func()) { return func() {} }

// reaperMain reports that lockctl is never started as a reaper here.
func reaperMain() (code int, ok bool) { return 0, false }

// lockExclusive does nothing here: without flock(2), lockFileHeld's
// checks narrow the race between extend and release --lock on one lock
// file, but do not close it.
func lockExclusive(*os.File) error { return nil }
