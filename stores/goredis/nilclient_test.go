package goredis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/goredis"
)

// A caller's wrapper of the go-redis client interface, as an application
// makes to add methods of its own to whatever client it was given.
type wrappedUniversal struct{ redis.UniversalClient }

// TestNewRefusesNilEmbeddedClient: a wrapper whose embedded client is nil
// is a non-nil redis.UniversalClient whose every method panics: New
// refuses it with lock.ErrInvalid naming the nil client, rather than
// panicking (reading its options) or returning a store whose first call
// panics.
func TestNewRefusesNilEmbeddedClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		want   string // in the error
	}{
		{"wrapped nil *redis.Client", wrappedClient{}, "*redis.Client"},
		{"pointer to wrapped nil *redis.Client", &wrappedClient{}, "*redis.Client"},
		{"wrapped nil *redis.ClusterClient", wrappedCluster{}, "*redis.ClusterClient"},
		{"wrapped nil *redis.Ring", wrappedRing{}, "*redis.Ring"},
		{"wrapped nil redis.UniversalClient", wrappedUniversal{}, "redis.UniversalClient"},
		{"wrapped wrapper of a nil *redis.Client", wrappedUniversal{wrappedClient{}}, "*redis.Client"},
		{"uncomparable wrapper of a nil *redis.Client", uncomparableClient{}, "*redis.Client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *goredis.Store
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("New(%T with a nil client) panicked: %v; want an error wrapping lock.ErrInvalid", tc.client, p)
					}
				}()
				s, err = goredis.New(tc.client)
			}()
			if !errors.Is(err, lock.ErrInvalid) || s != nil {
				t.Fatalf("New(%T with a nil client) = %v, %v; want nil, an error wrapping lock.ErrInvalid", tc.client, s, err)
			}
			if !strings.Contains(err.Error(), "nil "+tc.want) {
				t.Errorf("New(%T with a nil client) = %q; want it to name the nil %s", tc.client, err, tc.want)
			}
		})
	}
}

// TestNewTakesWrappedClients: the check of embedded clients refuses only
// nil ones: a wrapper of a live client, through the interface too, is
// taken.
func TestNewTakesWrappedClients(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, client := range []redis.UniversalClient{
		wrappedClient{c},
		&wrappedClient{c},
		wrappedUniversal{c},
		wrappedUniversal{wrappedClient{c}},
		uncomparableClient{Client: c},
	} {
		if _, err := goredis.New(client); err != nil {
			t.Errorf("New(%T wrapping a client) = %v; want a store", client, err)
		}
	}
}
