package memcache_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/stores/memcache"
)

// stat reads one of srv's statistics, failing the test on error.
func stat(t *testing.T, srv *memcachetest.Server, name string) int64 {
	t.Helper()
	n, err := srv.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// With WithServer, a lock the store took is released by its CAS id in
// one request: no gets, no cas; fenced or not.
func TestServerReleasesByCAS(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, _, _ := serverStore(t, srv, memcache.WithFenceGuard(0))
	for _, fenced := range []bool{false, true} {
		var err error
		if fenced {
			_, err = s.AcquireFenced(ctx(t), "r", "a", time.Minute)
		} else {
			err = s.Acquire(ctx(t), "r", "a", time.Minute)
		}
		if err != nil {
			t.Fatalf("fenced %v: Acquire(r, a) = %v", fenced, err)
		}
		if _, ok := memcache.RecordedCAS(s, "r", "a"); !ok {
			t.Fatalf("fenced %v: no CAS id recorded for r's lock", fenced)
		}
		gets, cas := stat(t, srv, "cmd_get"), stat(t, srv, "cas_hits")+stat(t, srv, "cas_misses")+stat(t, srv, "cas_badval")
		if err := s.Release(ctx(t), "r", "a"); err != nil {
			t.Fatalf("fenced %v: Release(r, a) = %v; want nil", fenced, err)
		}
		if g, c := stat(t, srv, "cmd_get"), stat(t, srv, "cas_hits")+stat(t, srv, "cas_misses")+stat(t, srv, "cas_badval"); g != gets || c != cas {
			t.Errorf("fenced %v: Release(r, a) sent %d gets and %d cas; want none (a delete by CAS id)", fenced, g-gets, c-cas)
		}
		if _, found := item(t, srv, "p:r"); found {
			t.Fatalf("fenced %v: the key of r after Release(r, a) is still there", fenced)
		}
		if _, ok := memcache.RecordedCAS(s, "r", "a"); ok {
			t.Errorf("fenced %v: the CAS id of r's lock is still recorded after its Release", fenced)
		}
		if err := s.Release(ctx(t), "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("fenced %v: Release(r, a) again = %v; want ErrNotHeld", fenced, err)
		}
	}
}

// An Extend gives the item another CAS id, whether made by this store or
// by another store of the server under the same token: the Release after
// it finds the recorded id stale (the delete changes nothing) and
// releases by token, as without WithServer.
func TestServerReleaseAfterExtend(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	s, client, _ := serverStore(t, srv)
	other := newStore(t, client, memcache.WithPrefix("p:"))
	for _, extender := range []*memcache.Store{s, other} {
		by := map[bool]string{true: "this store", false: "another store"}[extender == s]
		if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := extender.Extend(ctx(t), "r", "a", 2*time.Minute); err != nil {
			t.Fatalf("Extend(r, a) by %s = %v", by, err)
		}
		if err := s.Release(ctx(t), "r", "a"); err != nil {
			t.Fatalf("Release(r, a) after an Extend by %s = %v; want nil", by, err)
		}
		if _, found := item(t, srv, "p:r"); found {
			t.Fatalf("the key of r after Release(r, a) is still there (Extend by %s)", by)
		}
	}
}

// memcached counts CAS ids from 1 again when it restarts, so an item of
// the new run can carry the id the store recorded in the old one. The
// store never deletes by that id on another run: the new owner keeps its
// lock, and the old owner's Release reports it not held.
func TestServerReleaseAfterRestartSparesNewOwner(t *testing.T) {
	t.Parallel()
	for _, samePid := range []bool{false, true} {
		t.Run(map[bool]string{false: "another pid", true: "the same pid and start second"}[samePid], func(t *testing.T) {
			releaseAfterRestart(t, samePid)
		})
	}
}

// releaseAfterRestart is TestServerReleaseAfterRestartSparesNewOwner, with
// the runs before and after the restart alike but for their marks if
// samePid (a memcached in a container, pid 1, restarting within a
// second).
func releaseAfterRestart(t *testing.T, samePid bool) {
	srv := memcachetest.Start(t, nil)
	s, client, _ := serverStore(t, srv)
	if samePid {
		memcache.SetSamePidAndStart(s)
	}
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	cas, ok := memcache.RecordedCAS(s, "r", "a")
	if !ok {
		t.Fatal("no CAS id recorded for r's lock")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Another store that releases by CAS id takes r on the new run: its
	// connection adds the run's mark first, as s's did on the old one, so
	// that its item gets the id s recorded.
	other := newStore(t, srv.Client(t), memcache.WithPrefix("p:"), memcache.WithServer(srv.Addr()))
	if err := other.Acquire(ctx(t), "r", "b", time.Minute); err != nil {
		t.Fatalf("Acquire(r, b) after the restart = %v", err)
	}
	it, err := client.Get("p:r")
	if err != nil {
		t.Fatal(err)
	}
	if it.CasID != cas {
		t.Fatalf("the new owner's item has CAS id %d, the recorded one %d: the test needs them equal", it.CasID, cas)
	}
	if err := s.Release(ctx(t), "r", "a"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) after the restart = %v; want ErrNotHeld", err)
	}
	if it, found := item(t, srv, "p:r"); !found || it.Value != "b" {
		t.Errorf("the key of r after the old owner's Release = %+v, found %v; want the new owner's token b", it, found)
	}
}

// cutAt is a proxy to a memcached that passes everything, except on the
// first connection whose answers include a line starting with prefix: it
// passes the answers before that line, and the line itself if pass, and
// closes the connection.
func cutAt(t *testing.T, target, prefix string, pass bool) (addr string, cut *atomic.Bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	cut = new(atomic.Bool)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				r := bufio.NewReader(up)
				for {
					line, err := r.ReadBytes('\n')
					if len(line) > 0 && bytes.HasPrefix(line, []byte(prefix)) && cut.CompareAndSwap(false, true) {
						if pass {
							_, _ = c.Write(line)
						}
						return
					}
					if _, werr := c.Write(line); werr != nil || err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), cut
}

// A fenced acquisition whose add took the lock but whose incr's answer
// was lost gives the lock back and returns the failure, as the
// documentation of AcquireFenced says: it does not leave the lock held
// until its TTL.
func TestServerGivesBackWhenIncrAnswerLost(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	addr, cut := cutAt(t, srv.Addr(), "HD ", true)
	client := srv.Client(t)
	s := newStore(t, client, memcache.WithPrefix("p:"), memcache.WithServer(addr), memcache.WithFenceGuard(0))
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.AcquireFenced(ctx(t), "seed", "x", time.Minute); err == nil || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("AcquireFenced(seed, x) with its incr's answer lost = %v; want the failure", err)
	}
	if !cut.Load() {
		t.Fatal("the proxy cut no connection")
	}
	if _, found := item(t, srv, "p:seed"); found {
		t.Errorf("the key of seed is still there after AcquireFenced failed: the lock was not given back")
	}
	if _, err := s.AcquireFenced(ctx(t), "seed", "y", time.Minute); err != nil {
		t.Errorf("AcquireFenced(seed, y) afterwards = %v; want nil", err)
	}
}

// A delete by CAS id whose answer is lost may have taken effect: sent
// again on the same run of the server, it finds the key gone, which
// cannot tell whether the lock had been lost before. The Release reports
// the failure, never lock.ErrNotHeld.
func TestServerReleaseAnswerLostIsNotNotHeld(t *testing.T) {
	t.Parallel()
	srv := memcachetest.Start(t, nil)
	addr, cut := cutAt(t, srv.Addr(), "HD\r\n", false)
	s := newStore(t, srv.Client(t), memcache.WithPrefix("p:"), memcache.WithServer(addr))
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Acquire(ctx(t), "r", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	err := s.Release(ctx(t), "r", "a")
	if !cut.Load() {
		t.Fatal("the proxy cut no connection")
	}
	if err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release(r, a) whose delete's answer was lost = %v; want the failure, not ErrNotHeld", err)
	}
	if _, found := item(t, srv, "p:r"); found {
		t.Error("the key of r is still there: the delete did not reach memcached")
	}
}
