package main

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/memcachetest"
	"github.com/lockkit/lock/internal/testing/redistest"
	memcachestore "github.com/lockkit/lock/stores/memcache"
	redisstore "github.com/lockkit/lock/stores/redis"
)

// backend is a set of real servers started for a test, the --store flags
// that name them, and a locker of the library over the same servers.
type backend struct {
	name   string
	urls   []string
	locker func(t *testing.T) lock.Locker
	fences bool // locks carry a fence
	ttls   bool // the stores tell the remaining TTL
	limits bool // the stores tell the limit that permits were taken with
}

// flags returns the --store flags of b. A Redlock's get a store timeout
// that a loaded machine does not run out.
func (b backend) flags() []string {
	var f []string
	for _, u := range b.urls {
		f = append(f, "--store", u)
	}
	if len(b.urls) > 1 {
		f = append(f, "--store-timeout", storeTimeout.String())
	}
	return f
}

// storeTimeout bounds each store call of a Redlock in the tests: long, so
// that a loaded machine does not make a store look unavailable.
const storeTimeout = 2 * time.Second

// backends are the real setups the end-to-end tests run against: one
// Redis server, one memcached, and a Redlock over three Redis servers.
var backends = []struct {
	name  string
	start func(t *testing.T) backend
}{
	{"redis", func(t *testing.T) backend {
		srv := redistest.Start(t)
		return backend{name: "redis", urls: []string{"redis://" + srv.Addr()}, fences: true, ttls: true, limits: true,
			locker: func(t *testing.T) lock.Locker { return single(t, redisStore(t, srv)) }}
	}},
	{"memcache", func(t *testing.T) backend {
		srv := memcachetest.Start(t, nil)
		return backend{name: "memcache", urls: []string{"memcache://" + srv.Addr()},
			locker: func(t *testing.T) lock.Locker {
				s, err := memcachestore.New(srv.Client(t))
				if err != nil {
					t.Fatal(err)
				}
				return single(t, s)
			}}
	}},
	{"redlock", func(t *testing.T) backend {
		srvs := redistest.StartN(t, 3)
		b := backend{name: "redlock", ttls: true, fences: true, limits: true}
		for _, s := range srvs {
			b.urls = append(b.urls, "redis://"+s.Addr())
		}
		b.locker = func(t *testing.T) lock.Locker {
			stores := make([]lock.Store, len(srvs))
			for i, s := range srvs {
				stores[i] = redisStore(t, s)
			}
			l, err := lock.NewMulti(stores, &lock.Options{StoreTimeout: storeTimeout})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		return b
	}},
}

func redisStore(t *testing.T, srv *redistest.Server) *redisstore.Store {
	s, err := redisstore.New(srv.NewClient(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func single(t *testing.T, s lock.Store) lock.Locker {
	l, err := lock.NewSingle(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// eachBackend runs f as a parallel subtest for each backend.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			f(t, be.start(t))
		})
	}
}
