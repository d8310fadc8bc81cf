package testserver_test

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/testserver"
)

// The fixture's control verbs, checked on memcached (the smallest server
// we depend on).
func TestProcessVerbs(t *testing.T) {
	path := testserver.LookPath(t, "memcached", "apt-get install -y memcached")
	port := testserver.FreePort(t)
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses to run as root otherwise
	}
	p := testserver.Start(t, "memcached", path, args, port, "")
	if !answers(p.Addr()) {
		t.Fatalf("memcached on %s does not answer after Start", p.Addr())
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if answers(p.Addr()) {
		t.Fatal("memcached answered while paused")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if !answers(p.Addr()) {
		t.Fatal("memcached does not answer after Resume")
	}
	p.Kill()
	if p.Running() {
		t.Fatal("Running() = true after Kill")
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if !answers(p.Addr()) {
		t.Fatal("memcached does not answer after Restart on the same port")
	}
}

// answers reports whether a memcached "version" command gets a reply
// within 300ms.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Write([]byte("version\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	return err == nil && n > 0
}

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		require, ci string
		want        bool
	}{
		{"", "", false},
		{"", "false", false},
		{"0", "", false},
		{"1", "", true},
		{"", "true", true},
		{"", "1", true},
	} {
		t.Setenv(testserver.RequireEnv, tc.require)
		t.Setenv("CI", tc.ci)
		if got := testserver.Required(); got != tc.want {
			t.Errorf("Required() with %s=%q, CI=%q = %v; want %v", testserver.RequireEnv, tc.require, tc.ci, got, tc.want)
		}
	}
}
