//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// forwardedSignals are the signals run passes on to its command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// terminalSignal reports whether the terminal itself sends sig to every
// process of the foreground group (Ctrl-C, Ctrl-\, hangup): when the
// command shares lockctl's group it gets them directly.
func terminalSignal(sig os.Signal) bool {
	return sig == syscall.SIGINT || sig == syscall.SIGQUIT || sig == syscall.SIGHUP
}

// childAttr returns the process attributes of run's command: in a new
// process group of its own when newGroup (so that signals and the kill
// after a loss reach everything it started), and, where the system can,
// killed if lockctl dies (nothing would extend its lock any more).
func childAttr(newGroup bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: newGroup}
	setDeathSignal(a)
	return a
}

// signalChild sends sig to the process pid, or to its process group,
// and then SIGCONT to the group: a group stopped (its read of the
// terminal from the background stops it with SIGTTIN, and lockctl, which
// waits for it, keeps the lock) acts on sig only once continued, as kill
// and systemd continue what they signal.
func signalChild(pid int, group bool, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return nil
	}
	if !group {
		return syscall.Kill(pid, s)
	}
	err := syscall.Kill(-pid, s)
	if s != syscall.SIGKILL && s != syscall.SIGCONT {
		_ = syscall.Kill(-pid, syscall.SIGCONT)
	}
	return err
}

// groupAlive reports whether any process is left in the process group
// pgid, a zombie aside where the system can tell (an orphan that PID 1
// does not reap is dead all the same).
func groupAlive(pgid int) bool {
	if alive, known := groupRunning(pgid); known {
		return alive
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}

// catchBrokenPipes makes a write to a closed pipe or socket fail with
// EPIPE instead of killing lockctl with SIGPIPE, as it otherwise does on
// stdout and stderr (see os/signal): a lockctl killed so would leave the
// lock it holds behind, taken until its TTL runs out, with its token lost.
// Failing, the write is reported, and acquire releases the lock it could
// not record; run and elect go on supervising their command. A handled
// signal, unlike an ignored one, is reset for the commands lockctl starts.
func catchBrokenPipes() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

// ignoreStop makes lockctl ignore the terminal's stop signal (Ctrl-Z): a
// stopped lockctl could not extend the lock of a command still running.
// The signal is caught and dropped rather than ignored: an ignored signal
// stays ignored across exec, in the command and in everything it starts,
// while a caught one is reset to its default for them.
func ignoreStop() { signal.Notify(make(chan os.Signal, 1), syscall.SIGTSTP) }

// signalNumber returns the number of sig, for the 128+n exit status.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

// signalName returns the usual name of sig, such as SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	}
	return sig.String()
}

// waitSignal returns the signal that killed a process, if one did.
func waitSignal(ps *os.ProcessState) (os.Signal, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal(), true
	}
	return nil, false
}

var (
	sigTERM os.Signal = syscall.SIGTERM
	sigKILL os.Signal = syscall.SIGKILL
)

// lockExclusive waits for an exclusive flock(2) on f, which closing f
// frees: it keeps the lock-file updates of extend and release --lock
// apart (see lockFileHeld).
func lockExclusive(f *os.File) error {
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != syscall.EINTR {
			return err
		}
	}
}
