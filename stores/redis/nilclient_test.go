package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// A caller's wrapper of the rueidis client interface, as an application
// makes to add methods of its own to whatever client it was given.
type wrapped struct{ rueidis.Client }

// TestNewRefusesNilClients: a nil client, a nil pointer to a wrapper, and
// a wrapper whose embedded client is nil (a non-nil rueidis.Client whose
// every method panics) are refused with lock.ErrInvalid naming what is
// nil, rather than New panicking on the client's Mode.
func TestNewRefusesNilClients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client rueidis.Client
		want   string // in the error
	}{
		{"nil", nil, "nil client"},
		{"nil *wrapped", (*wrapped)(nil), "nil client"},
		{"wrapped nil rueidis.Client", wrapped{}, "nil rueidis.Client"},
		{"pointer to wrapped nil rueidis.Client", &wrapped{}, "nil rueidis.Client"},
		{"wrapped wrapper of a nil rueidis.Client", wrapped{wrapped{}}, "nil rueidis.Client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *redis.Store
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("New(%s) panicked: %v; want an error wrapping lock.ErrInvalid", tc.name, p)
					}
				}()
				s, err = redis.New(tc.client)
			}()
			if !errors.Is(err, lock.ErrInvalid) || s != nil {
				t.Fatalf("New(%s) = %v, %v; want nil, an error wrapping lock.ErrInvalid", tc.name, s, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%s) = %q; want it to name the %s", tc.name, err, tc.want)
			}
		})
	}
}

// TestNewTakesWrappedClients: only nil clients are refused: a wrapper of
// a live client is taken.
func TestNewTakesWrappedClients(t *testing.T) {
	c := redistest.Start(t).NewClient(t)
	for _, client := range []rueidis.Client{wrapped{c}, &wrapped{c}, wrapped{wrapped{c}}} {
		if _, err := redis.New(client); err != nil {
			t.Errorf("New(%T wrapping a client) = %v; want a store", client, err)
		}
	}
}

// declaring is an instrumenting wrapper: it embeds the rueidis.Client
// interface, left nil, to satisfy it, and declares every method the store
// calls itself, delegating to inner.
type declaring struct {
	rueidis.Client // nil: never called
	inner          rueidis.Client
	calls          int
}

func (c *declaring) B() rueidis.Builder               { return c.inner.B() }
func (c *declaring) Mode() rueidis.ClientMode         { return c.inner.Mode() }
func (c *declaring) Nodes() map[string]rueidis.Client { return c.inner.Nodes() }
func (c *declaring) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.calls++
	return c.inner.Do(ctx, cmd)
}
func (c *declaring) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	return c.inner.DoMulti(ctx, cmds...)
}
func (c *declaring) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.inner.Dedicated(fn)
}
func (c *declaring) Receive(ctx context.Context, sub rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	return c.inner.Receive(ctx, sub, fn)
}

// TestNewTakesWrapperDeclaringItsMethods: a wrapper that embeds a nil
// client but declares the methods the store calls works, and is taken.
func TestNewTakesWrapperDeclaringItsMethods(t *testing.T) {
	w := &declaring{inner: redistest.Start(t).NewClient(t)}
	s, err := redis.New(w)
	if err != nil {
		t.Fatalf("New(a wrapper declaring every method it uses) = %v; want a store", err)
	}
	if err := s.Acquire(t.Context(), "r", "token", time.Second); err != nil || w.calls == 0 {
		t.Fatalf("Acquire(r) through the wrapper = %v, %d calls through it; want nil, some", err, w.calls)
	}
}
