package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStatusJSONUnreachable: --json prints its one object, held null and
// the error, also when the stores cannot be opened at all (a lone
// unreachable store, or a Redlock short of a quorum), and exits 1.
func TestStatusJSONUnreachable(t *testing.T) {
	addr, addr2 := closedPort(t), closedPort(t)
	for _, stores := range [][]string{
		{"--store", "redis://" + addr},
		{"--store", "memory://", "--store", "redis://" + addr, "--store", "redis://" + addr2},
	} {
		code, out, errOut := runCLI(t, nil, append(append([]string{"status", "--json", "-n", "2"}, stores...), "r")...)
		var rep struct {
			Resource string
			Held     *bool
			Error    string
			Permits  *struct{ Error string }
			RWLock   *struct{ Error string }
			Stores   []struct{ Store, Error string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Errorf("status --json %v: stdout %q is not JSON (%v); stderr %q", stores, out, err, errOut)
			continue
		}
		if code != exitFailure || rep.Resource != "r" || rep.Held != nil || !strings.Contains(rep.Error, addr) ||
			len(rep.Stores) != len(stores)/2 || rep.Stores[0].Error == "" || rep.Permits == nil || rep.Permits.Error == "" ||
			rep.RWLock == nil || rep.RWLock.Error == "" {
			t.Errorf("status --json %v: exit %d, report %+v; want exit 1, held null, the error, every store, permits and rwlock with the error", stores, code, rep)
		}
		if !strings.Contains(errOut, addr) {
			t.Errorf("status --json %v: stderr %q; want the error there too", stores, errOut)
		}
	}
}
