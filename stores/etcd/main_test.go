package etcd_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockkit/lock/internal/testing/etcdtest"
	"github.com/lockkit/lock/stores/etcd"
)

func TestMain(m *testing.M) {
	code := m.Run()
	etcdtest.CloseShared()
	os.Exit(code)
}

var prefixes atomic.Int64

// newStore returns a store on client with a key prefix no other store of
// the test binary uses, accepting the test clusters' shortest TTL.
func newStore(t testing.TB, client *clientv3.Client, opts ...etcd.Option) *etcd.Store {
	t.Helper()
	opts = append([]etcd.Option{
		etcd.WithPrefix(fmt.Sprintf("test%d/", prefixes.Add(1))),
		etcd.WithMinTTL(etcdtest.MinTTL),
	}, opts...)
	s, err := etcd.New(client, opts...)
	if err != nil {
		t.Fatalf("etcd.New: %v", err)
	}
	return s
}

// clientOf returns a client of endpoints, closed when t ends, that logs
// nothing (the fault tests make it retry a lot).
func clientOf(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := newClient(endpoints...)
	if err != nil {
		t.Fatalf("etcd client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
