package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/etcdtest"
	etcdstore "github.com/lockkit/lock/stores/etcd"
)

// The etcd section: lockkit's etcd store next to etcd's own
// concurrency.Mutex and a hand-written floor, on a three-member cluster
// on loopback (etcdtest's: data on tmpfs, a 100ms heartbeat).

func init() {
	extraSections = append(extraSections, extraSection{key: "etcd", run: etcdSection, report: etcdReport, targets: etcdTargets})
}

func etcdLibraries() []library {
	return []library{
		{name: "etcd raw (floor)", floor: true, open: openRawEtcd},
		{name: "lockkit (etcd)", open: openLockkitEtcd},
		{name: "etcd concurrency.Mutex", open: openEtcdMutex},
	}
}

// etcdSection measures lock+unlock pairs with 64 goroutines and with one
// (latency), and contention among 16 clients, on a cluster it starts.
func etcdSection(p plan, res *results, s *servers, progress func(string, ...any)) error {
	path, err := etcdtest.LookPath()
	if err != nil {
		if required() {
			return err
		}
		progress("etcd: skipped: %v", err)
		return nil
	}
	cluster, err := etcdtest.Launch(path, 3, nil)
	if err != nil {
		return err
	}
	defer cluster.Close()
	newEtcdEnv := func() env {
		e := newEnv(s, p.ttl)
		e.etcd = cluster.Endpoints()
		return e
	}
	count := func(e env) leftoverFunc { return func(prefix string) (int, int) { return etcdLeft(e, prefix) } }
	libs := selected(etcdLibraries())
	// A new cluster is slow for its first second or so: warm it up, off
	// the record, so that the first library measured is not the one that
	// pays for it.
	throughput(libs[0], newEtcdEnv(), 16, max(p.throughput, time.Second), false, nil)
	for _, sec := range []struct {
		key        string
		goroutines int
	}{{"etcd", 64}, {"etcd-1", 1}} {
		for pass := range p.passes {
			for _, lib := range inPassOrder(libs, pass) {
				e := newEtcdEnv()
				r := throughput(lib, e, sec.goroutines, p.throughput, sec.goroutines == 1, count(e))
				progress("%s, %d goroutines, pass %d: %-24s %7.0f pairs/s  p50 %6.0fµs  errors %d %s", sec.key, sec.goroutines, pass+1, lib.name, r.PairsPerSec, r.P50, r.Errors, r.FirstError)
				res.Throughput[sec.key] = append(res.Throughput[sec.key], cellResult{Section: sec.key, Library: lib.name, Floor: lib.floor, Pass: pass + 1, throughputResult: r})
			}
		}
		res.sections[sec.key] = names(libs)
		setRatios(res.Throughput[sec.key])
	}
	for _, pause := range []time.Duration{time.Millisecond, 0} {
		for pass := range p.fewer {
			for _, lib := range inPassOrder(libs, pass) {
				e := newEtcdEnv()
				r := contention(lib, e, 16, pause, p.contended, count(e))
				progress("etcd contention, pause %v, pass %d: %-24s %6.0f acq/s  handoff p50 %6.0fµs  wait p99 %7.0fµs  violations %d  errors %d %s",
					pause, pass+1, lib.name, r.PerSec, r.HandoffP50, r.WaitP99, r.Violations, r.Errors, r.FirstError)
				res.Contention = append(res.Contention, contentionCell{Library: lib.name, Pause: pause, Pass: pass + 1, contentionResult: r})
			}
		}
	}
	res.sections["etcd-contention"] = names(libs)
	return nil
}

func etcdReport(w io.Writer, r *results) {
	throughputTable(w, r, "etcd", "etcd, 3 members: 64 goroutines, each on its own key, TryLock+Unlock pairs")
	throughputTable(w, r, "etcd-1", "etcd, 3 members: 1 goroutine (latency of a TryLock+Unlock pair)")
	contentionTables(w, r, "etcd-contention", "etcd, 3 members")
}

func etcdTargets(r *results) []target {
	var ts []target
	pps := func(c cellResult) float64 { return c.PairsPerSec }
	if cells := r.Throughput["etcd"]; len(cells) > 0 {
		v := ratioPerPass(cells, "lockkit (etcd)", "etcd concurrency.Mutex", pps)
		ts = append(ts, target{"etcd, 64 goroutines", "≥ concurrency.Mutex", fmt.Sprintf("%.2f×", v), v >= 1})
	}
	for _, pause := range []time.Duration{time.Millisecond, 0} {
		ours := contentionOf(r.Contention, "lockkit (etcd)", pause)
		theirs := contentionOf(r.Contention, "etcd concurrency.Mutex", pause)
		if len(ours) == 0 || len(theirs) == 0 {
			continue
		}
		h, th := medianOf(ours, func(c contentionCell) float64 { return c.HandoffP50 }), medianOf(theirs, func(c contentionCell) float64 { return c.HandoffP50 })
		ts = append(ts, target{fmt.Sprintf("etcd contention, 16 clients, pause %v", pause), "handoff p50 < concurrency.Mutex",
			fmt.Sprintf("%.0fµs vs %.0fµs", h, th), h < th})
	}
	return ts
}

// etcdClient returns a client of the cluster that logs nothing.
func etcdClient(e env) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: e.etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// etcdLeft counts the keys left under prefix.
func etcdLeft(e env, prefix string) (int, int) {
	c, err := etcdClient(e)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: counting etcd leftovers:", err)
		return -1, -1
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: counting etcd leftovers:", err)
		return -1, -1
	}
	return int(resp.Count), 0
}

func openLockkitEtcd(e env) (client, error) {
	c, err := etcdClient(e)
	if err != nil {
		return nil, err
	}
	s, err := etcdstore.New(c, etcdstore.WithPrefix(e.prefix))
	if err == nil {
		var l lock.Locker
		if l, err = lock.NewSingle(s, nil); err == nil {
			return lockkitClient(l, e, func() { _ = c.Close() }), nil
		}
	}
	_ = c.Close()
	return nil, err
}

// etcdMutex is a concurrency.Mutex on one key, in its client's session.
type etcdMutex struct{ m *concurrency.Mutex }

// openEtcdMutex opens a client with one session (a lease kept alive in
// the background), shared by its mutexes, as etcd's documentation shows.
func openEtcdMutex(e env) (client, error) {
	c, err := etcdClient(e)
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(c, concurrency.WithTTL(int(e.ttl/time.Second)))
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return clientFuncs{
		m: func(key string) mutex { return etcdMutex{concurrency.NewMutex(s, e.prefix+key)} },
		c: func() { _ = s.Close(); _ = c.Close() },
	}, nil
}

func (m etcdMutex) tryLock(ctx context.Context) (bool, error) {
	err := m.m.TryLock(ctx)
	if errors.Is(err, concurrency.ErrLocked) {
		return false, nil
	}
	return err == nil, err
}

func (m etcdMutex) lock(ctx context.Context) error   { return m.m.Lock(ctx) }
func (m etcdMutex) unlock(ctx context.Context) error { return m.m.Unlock(ctx) }

// rawEtcd is the least a compare-and-delete lock costs on etcd: a put
// if the key is absent, attached to a lease the client shares among its
// keys (granted once), and a delete if the key holds the token — two
// transactions. It has no TTL of its own per lock.
type rawEtcd struct {
	c          *clientv3.Client
	lease      clientv3.LeaseID
	key, token string
}

func openRawEtcd(e env) (client, error) {
	c, err := etcdClient(e)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.Grant(ctx, int64(e.ttl/time.Second))
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return clientFuncs{
		m: func(key string) mutex { return &rawEtcd{c: c, lease: l.ID, key: e.prefix + key, token: rawToken()} },
		c: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = c.Revoke(ctx, l.ID)
			_ = c.Close()
		},
	}, nil
}

func (m *rawEtcd) tryLock(ctx context.Context) (bool, error) {
	resp, err := m.c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).
		Then(clientv3.OpPut(m.key, m.token, clientv3.WithLease(m.lease))).
		Commit()
	return err == nil && resp.Succeeded, err
}

func (m *rawEtcd) lock(ctx context.Context) error { return poll(ctx, m.tryLock) }

func (m *rawEtcd) unlock(ctx context.Context) error {
	resp, err := m.c.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(m.key), "=", m.token)).
		Then(clientv3.OpDelete(m.key)).
		Commit()
	if err == nil && !resp.Succeeded {
		err = errNotReleased
	}
	return err
}
