package redis_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

func TestNewValidates(t *testing.T) {
	client := redistest.Start(t).NewClient(t)
	for name, opt := range map[string]redis.Option{
		"prefix with {":          redis.WithPrefix("a{"),
		"prefix with }":          redis.WithPrefix("}"),
		"empty name":             redis.WithName(""),
		"zero replicas":          redis.WithWaitReplicas(0, time.Second),
		"zero replica timeout":   redis.WithWaitReplicas(1, 0),
		"sub-ms replica timeout": redis.WithWaitReplicas(1, time.Microsecond),
		"zero fence retention":   redis.WithFenceRetention(0),
	} {
		if _, err := redis.New(client, opt); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New with %s = %v; want an error matching lock.ErrInvalid", name, err)
		}
	}
	if _, err := redis.New(nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New(nil) = %v; want an error matching lock.ErrInvalid", err)
	}
	if _, err := redis.New(client, nil, redis.WithPrefix("")); err != nil {
		t.Errorf("New with a nil option and an empty prefix = %v; want nil", err)
	}
}

func TestString(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	s := newStore(t, client)
	if got, want := s.String(), "redis "+srv.Addr(); got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if got := newStore(t, client, redis.WithName("orders")).String(); got != "orders" {
		t.Errorf("String() with WithName(orders) = %q", got)
	}
	c := redistest.SharedCluster(t)
	if got := newStore(t, c.NewClient(t)).String(); !strings.HasPrefix(got, "redis 127.0.0.1:") || !strings.HasSuffix(got, " nodes)") {
		t.Errorf("String() of a cluster store = %q; want a node's address and the number of others", got)
	}
}
