package main

import (
	"errors"
	"fmt"
)

// Exit statuses. lockctl run exits with its command's status, so a command
// may itself exit with one of these; --conflict-exit-code moves the one
// scripts most often test for.
const (
	exitOK       = 0   // success; for run and elect, the command's own status
	exitFailure  = 1   // a store failed or could not be reached, or another error
	exitUsage    = 2   // bad flags or arguments, a malformed store URL
	exitUnsafe   = 3   // check: mutual exclusion violated, or updates lost
	exitConflict = 75  // run, acquire: the lock is held by another owner (EX_TEMPFAIL)
	exitLost     = 76  // run, elect: the lock or term was lost while the command ran; extend, release --lock: it was no longer held
	exitNoExec   = 126 // run, elect: the command was found but could not be started
	exitNotFound = 127 // run, elect: the command was not found
	exitSignal   = 128 // run, elect: 128+n when the command died of signal n, or lockctl was interrupted by it while waiting
)

// exitCodesHelp is the table shown by lockctl help and docs/lockctl.md.
const exitCodesHelp = `Exit status:
  0        success; for run and elect, the command's own exit status
  1        error: a store failed or could not be reached, among others
  2        usage error: bad flag or argument, malformed store URL
  3        check: mutual exclusion was violated or updates were lost
  75       run, acquire: the lock is held by another owner
           (--conflict-exit-code)
  76       run, elect: the lock or term was lost while the command ran (it
           was stopped); extend, release --lock: the lock was no longer held
  126/127  run, elect: the command could not be started / was not found
  128+n    run, elect: the command died of signal n; run, elect, acquire:
           lockctl was interrupted by signal n while waiting for the lock;
           141 (SIGPIPE): the reader of lockctl's output went away
           (lockctl status | head -1)
`

// exitError is an error that sets lockctl's exit status. With a nil err,
// nothing is printed: the command already said what happened.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes lockctl exit with code after
// printing err (unless err is nil).
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// usageError is a mistake in the command line: it is printed with the
// command's usage, and lockctl exits with exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// exitCode maps an error returned by a command to lockctl's exit status.
func exitCode(err error) int {
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}
