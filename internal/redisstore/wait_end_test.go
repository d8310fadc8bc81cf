package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

// endingClient is a Client whose server holds every lock for a minute,
// and whose subscriptions run until their context ends, as a client's do:
// it calls atLook when WaitRelease first looks at the lock, and atWait
// when it gets in line.
type endingClient struct {
	confirm        bool // confirm subscriptions
	atLook, atWait func()
}

func (c *endingClient) Do(_ context.Context, cmd Cmd) Reply {
	switch {
	case cmd.Name == "PTTL":
		if c.atLook != nil {
			c.atLook()
		}
		return Reply{Int: time.Minute.Milliseconds()}
	case cmd.Script == waitScript:
		if c.atWait != nil {
			c.atWait()
		}
		return Reply{Int: time.Minute.Milliseconds()}
	}
	return Reply{}
}

func (c *endingClient) DoMulti(_ context.Context, cmds []Cmd, replies []Reply, _ bool) {
	for i := range cmds {
		replies[i] = Reply{}
	}
}

func (c *endingClient) Subscribe(ctx context.Context, _ string, confirmed func(), _ func(string)) error {
	if c.confirm {
		confirmed()
	}
	<-ctx.Done()
	return nil // as Client.Subscribe does once its context has ended
}

func (c *endingClient) NotSent(context.Context, error) bool { return false }
func (c *endingClient) Cluster() bool                       { return false }

// A subscription that ends while the lock is still held — ended by a
// queued acquisition of the process that found it on a node that is not
// the lock's master (hub.end), with no error of its own — is no release:
// WaitRelease returns an error, as AcquireQueued does, whether the
// subscription had been confirmed or not.
func TestWaitReleaseSubscriptionEndedIsNoRelease(t *testing.T) {
	for _, c := range []struct {
		name      string
		confirmed bool
	}{
		{"ended while in line", true},
		{"ended before it was confirmed", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := &endingClient{confirm: c.confirmed}
			s, err := New(client, "redis", "test", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			key := s.lockKey("r")
			end := func() {
				if tp := hub.lookup(s, key); tp != nil {
					hub.end(tp)
				}
			}
			if c.confirmed {
				client.atWait = end
			} else {
				client.atLook = end
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err = s.WaitRelease(ctx, "r")
			switch {
			case ctx.Err() != nil:
				t.Fatalf("WaitRelease(r) = %v at its context's end; want it to return when its subscription ended", err)
			case err == nil:
				t.Errorf("WaitRelease(r), still held, whose subscription ended = nil; want an error: nothing was released")
			case !errors.Is(err, ErrSubscriptionEnded):
				t.Errorf("WaitRelease(r) whose subscription ended = %v; want it to match ErrSubscriptionEnded", err)
			case errors.Is(err, lock.ErrNotAcquired), errors.Is(err, lock.ErrNotHeld):
				t.Errorf("WaitRelease(r) whose subscription ended = %v; want no lock outcome", err)
			}
		})
	}
}
