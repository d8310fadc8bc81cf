package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// silentServer returns the address of a listener that accepts connections
// and never answers: a server that hangs.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// --timeout bounds the whole command, connecting to the stores included:
// against a server that never answers, and URLs whose own dial timeouts
// are an hour, status, extend and release give up after --timeout (they
// used to wait out the URL's dial timeout first). lockctl's helper fails
// the test if a command runs for a minute.
func TestTimeoutBoundsConnecting(t *testing.T) {
	addr := silentServer(t)
	lockFile := filepath.Join(t.TempDir(), "lock.json")
	if err := os.WriteFile(lockFile, []byte(`{"resource":"r","token":"secret~holder"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{
		"redis://" + addr + "?dial_timeout=1h",
		"memcache://" + addr + "?timeout=1h",
		"etcd://" + addr + "?dial_timeout=1h",
		"postgres://app@" + addr + "/app?connect_timeout=3600",
	} {
		for _, args := range [][]string{
			{"status", "--timeout", "200ms", "--store", store, "r"},
			{"extend", "--timeout", "200ms", "--lock", lockFile, "--store", store},
			{"release", "--timeout", "200ms", "--lock", lockFile, "--store", store},
			{"release", "--force", "--yes", "--timeout", "200ms", "--store", store, "r"},
		} {
			scheme, _, _ := strings.Cut(store, ":")
			t.Run(scheme+"/"+strings.Join(args[:2], " "), func(t *testing.T) {
				t.Parallel()
				if code, _, stderr := lockctl(t, nil, args...); code != exitFailure {
					t.Errorf("lockctl %q against a server that never answers: exit %d, stderr %q; want %d", args, code, stderr, exitFailure)
				}
			})
		}
	}
}
