package main

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	etcdstore "github.com/lockkit/lock/stores/etcd"
)

// The etcd section: lockkit's etcd store next to etcd's own
// concurrency.Mutex and a hand-written floor, on a three-member cluster
// on loopback (etcdtest's: data on tmpfs, a 100ms heartbeat).

func etcdLibraries() []library {
	return []library{
		{name: "etcd raw (floor)", floor: true, open: openRawEtcd},
		{name: "lockkit (etcd)", open: openLockkitEtcd},
		{name: "etcd concurrency.Mutex", open: openEtcdMutex},
	}
}

// etcd runs the section's cells on a cluster it starts: lock+unlock pairs
// with 64 goroutines and with one (latency), and contention among 16
// workers. Without etcd it skips them, unless servers are required.
func (r *runner) etcd() error {
	path, err := etcdtest.LookPath()
	if err != nil {
		return r.skip("etcd", err)
	}
	cluster, err := etcdtest.Launch(path, 3, nil)
	if err != nil {
		return err
	}
	defer cluster.Close()
	withCluster := func(e env) env {
		e.etcd = cluster.Endpoints()
		return e
	}
	r.res.Machine.Etcd = etcdVersion(withCluster(env{}))
	libs := etcdLibraries()
	sp := spec{key: "etcd", title: "etcd, 3 members: 64 goroutines, TryLock+Unlock pairs", kind: kindThroughput,
		libs: libs, workers: 64, env: withCluster, count: etcdLeftovers}
	r.warmUp(sp)
	if r.want("etcd", "etcd") {
		r.throughput(sp)
	}
	if r.want("etcd", "etcd-1") {
		r.throughput(spec{key: "etcd-1", title: "etcd, 3 members: 1 goroutine, the latency of a TryLock+Unlock pair", kind: kindLatency,
			libs: libs, workers: 1, env: withCluster, count: etcdLeftovers})
	}
	if r.want("etcd", "etcd-contention") {
		r.contention(spec{key: "etcd-contention", title: "Contention on etcd, 3 members: 16 workers (each its own client) on one name, Lock → update → Unlock → pause",
			libs: libs, workers: 16, pauses: []time.Duration{0, time.Millisecond}, env: withCluster, count: etcdLeftovers})
	}
	return nil
}

// etcdClient returns a client of the cluster that logs nothing.
func etcdClient(e env) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: e.etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// etcdVersion returns the cluster's version, or "" if it cannot tell.
func etcdVersion(e env) string {
	c, err := etcdClient(e)
	if err != nil {
		return ""
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx, e.etcd[0])
	if err != nil {
		return ""
	}
	return st.Version
}

// etcdLeftovers counts every key in the cluster, then deletes them.
func etcdLeftovers(e env) (l leftovers) {
	c, err := etcdClient(e)
	if err != nil {
		l.failed(err)
		return l
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		l.failed(err)
		return l
	}
	for _, kv := range resp.Kvs {
		l.add(string(kv.Key), e)
	}
	if !e.keep {
		_, err = c.Delete(ctx, "\x00", clientv3.WithFromKey())
		l.failed(err)
	}
	return l
}

func openLockkitEtcd(e env) (client, error) {
	c, err := etcdClient(e)
	if err != nil {
		return nil, err
	}
	s, err := etcdstore.New(c)
	return singleClient(s, err, e, e.options(false, nil), func() {
		if s != nil {
			_ = s.Close(context.Background()) // revokes the leases it keeps
		}
		_ = c.Close()
	})
}

// etcdWorker keeps a concurrency.Mutex, in its client's session, for the
// name it last locked; a new name takes a new one, as etcd's users make
// them.
type etcdWorker struct {
	s    *concurrency.Session
	name string
	m    *concurrency.Mutex
}

func (w *etcdWorker) forName(name string) *concurrency.Mutex {
	if name != w.name || w.m == nil {
		w.name, w.m = name, concurrency.NewMutex(w.s, name)
	}
	return w.m
}

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
		w: func() worker { return &etcdWorker{s: s} },
		c: func() { _ = s.Close(); _ = c.Close() },
	}, nil
}

func (w *etcdWorker) tryLock(ctx context.Context, name string) (bool, error) {
	err := w.forName(name).TryLock(ctx)
	if errors.Is(err, concurrency.ErrLocked) {
		return false, nil
	}
	return err == nil, err
}

func (w *etcdWorker) lock(ctx context.Context, name string) error { return w.forName(name).Lock(ctx) }
func (w *etcdWorker) unlock(ctx context.Context) error            { return w.m.Unlock(ctx) }

// rawEtcd is the least a lock costs on etcd: a key of the holder's own
// under the name's scope, put by a transaction if the scope holds no key,
// attached to a lease the client shares among its keys (granted once), and
// a plain delete of that key, which is the holder's alone. It has no TTL
// of its own per lock.
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
		w: func() worker { return &rawEtcd{c: c, lease: l.ID, token: rawToken()} },
		c: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = c.Revoke(ctx, l.ID)
			_ = c.Close()
		},
	}, nil
}

func (m *rawEtcd) tryLock(ctx context.Context, name string) (bool, error) {
	scope := name + "\x00\x00"
	m.key = scope + m.token
	resp, err := m.c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(scope), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(m.key, "", clientv3.WithLease(m.lease))).
		Commit()
	return err == nil && resp.Succeeded, err
}

func (m *rawEtcd) lock(ctx context.Context, name string) error {
	return poll(ctx, time.Millisecond, func() (bool, error) { return m.tryLock(ctx, name) })
}

func (m *rawEtcd) unlock(ctx context.Context) error {
	resp, err := m.c.Delete(ctx, m.key)
	if err == nil && resp.Deleted == 0 {
		err = errNotReleased
	}
	return err
}
