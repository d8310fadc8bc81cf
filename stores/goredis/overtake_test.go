package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// A started acquisition whose batch waits behind a command its caller
// abandoned on the same lock is a flight from the start: the caller,
// answered by its own deadline meanwhile, cleans up with Release, which
// must wait for the acquisition, not overtake it (the acquisition then
// took the lock after the release, left held until its TTL ran out).
// Each round pauses the server so that the commands queue up; a round
// without the fix lost the race about half the time.
func TestReleaseWaitsForAStartedAcquisitionStillWaiting(t *testing.T) {
	for _, bounded := range []bool{false, true} {
		t.Run(fmt.Sprint("ContextTimeoutEnabled=", bounded), func(t *testing.T) {
			srv := redistest.Start(t)
			client := clientOf(t, srv, func(o *redis.Options) { o.ContextTimeoutEnabled = bounded; o.ReadTimeout = 5 * time.Second })
			s := newStore(t, client)
			long := ctxFor(t, 30*time.Second)
			for round := range 4 {
				res, tok := fmt.Sprintf("k%d", round), fmt.Sprintf("tok%d", round)
				if err := client.Ping(long).Err(); err != nil {
					t.Fatal(err)
				}
				if err := srv.ClientPause(1500*time.Millisecond, false); err != nil {
					t.Fatal(err)
				}
				// A command on the lock whose caller gives up: a flight
				// that the store orders later commands on the lock after.
				abandoned, cancel := context.WithCancel(context.Background()) // no deadline: the store stops waiting at the cancellation
				time.AfterFunc(50*time.Millisecond, cancel)
				if _, err := s.Exists(abandoned, res); !errors.Is(err, context.Canceled) {
					t.Fatalf("Exists(%s) on a paused server, canceled = %v; want context.Canceled", res, err)
				}
				// An acquisition started on the lock, in a batch that
				// another call's later deadline keeps alive; its own
				// caller gives up first.
				short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
				got, other := make(chan error, 1), make(chan error, 1)
				s.Start(short, lock.Call{Op: lock.CallAcquire, Resource: res, Token: tok, TTL: time.Minute}, func(_ uint64, err error) { got <- err })
				s.Start(long, lock.Call{Op: lock.CallAcquire, Resource: "other-" + res, Token: "o", TTL: time.Minute}, func(_ uint64, err error) { other <- err })
				err := <-got
				cancelShort()
				if err == nil || errors.Is(err, lock.ErrNotAcquired) {
					t.Fatalf("a started acquisition of %s on a paused server, its deadline passed = %v; want its context's error", res, err)
				}
				// The caller cleans up by token, as the lockers do.
				rerr := s.Release(long, res, tok)
				<-other // the batch, the acquisition of res with it, has been answered
				if h, held, err := s.Holder(long, res); err != nil || held {
					t.Errorf("round %d: Release(%s) = %v after the acquisition it cleans up after; then Holder = %q, %v, %v; want free: the release overtook the acquisition", round, res, rerr, h, held, err)
				}
			}
		})
	}
}
