// Command faulttable turns the report lines of the fault suite into the
// Markdown table of docs/reliability.md:
//
//	LOCKKIT_FAULT_REPORT=/tmp/faults.txt go test -race ./internal/testing/faultsuite/
//	go run ./internal/testing/faultkit/cmd/faulttable < /tmp/faults.txt
//
// Lines that are not report lines are skipped, so the verbose output of
// go test can be piped in as well.
package main

import (
	"fmt"
	"os"

	"github.com/lockkit/lock/internal/testing/faultkit"
)

func main() {
	if err := faultkit.Table(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faulttable:", err)
		os.Exit(1)
	}
}
