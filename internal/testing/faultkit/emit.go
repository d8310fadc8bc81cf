package faultkit

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/lockkit/lock/internal/contention"
)

// ReportEnv names the environment variable that, when set to a file path,
// makes [Emit] append each report line to that file, so that a table of
// figures can be generated from a test run (see cmd/faulttable).
const ReportEnv = "LOCKKIT_FAULT_REPORT"

var reportMu sync.Mutex // serialises appends from the tests of one process

// Emit logs r's line with t.Log and, if the environment variable ReportEnv
// names a file, appends the line to it (failing t if it cannot).
func Emit(t testing.TB, r contention.Report) {
	t.Helper()
	line := r.Line()
	t.Log(line)
	path := os.Getenv(ReportEnv)
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(line + "\n") // one write: lines from parallel test binaries do not interleave
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Errorf("faultkit: appending the report to %s (%s): %v", path, ReportEnv, err)
	}
}
