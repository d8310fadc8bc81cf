package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// WaitRelease implements [lock.Waiter]. It subscribes to the resource's
// shard channel (SSUBSCRIBE, on the node that holds the lock), then reads
// the lock's PTTL: if the resource is free it returns nil at once;
// otherwise it blocks until a Release announces the release on the
// channel, the lock's TTL runs out (it then reads the PTTL again, as the
// lock may have been extended), or ctx ends. Subscribing before looking
// means no release that happens after the call began is missed.
//
// Callers of one process waiting for the same resource share one
// subscription, which is dropped (SUNSUBSCRIBE) shortly after the last of
// them returns; nothing stays behind. A release wakes one of them, the
// longest waiting, so that they take turns rather than stampede (a caller
// that leaves because its ctx ended passes a wake it got on to the next);
// every process waiting has one caller woken. Expiry wakes every caller.
//
// If the subscription breaks (the connection is lost, the slot moves to
// another node), waiting callers get an error at once; the lockers then
// fall back to their retry delay.
// Sharded pub/sub needs Redis 7; on older servers WaitRelease returns an
// error matching errors.ErrUnsupported, and the lockers sleep instead.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	if s.noShardedPubSub.Load() {
		return errNoShardedPubSub
	}
	key := s.lockKey(resource)
	t, err := hub.join(ctx, s.client, s.subOwner, key)
	if err != nil {
		return err
	}
	defer hub.leave(t)

	// A first look while the subscription is being made: a free resource
	// or a failing server is known at once. If held, look again once
	// subscribed, so that a release in between is not missed.
	ms, err := s.pttlWaiting(ctx, key)
	switch {
	case err != nil:
		return s.failed(ctx, err)
	case ms == -2:
		return nil
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !t.subscribed.Load() {
		<-t.done
		if isUnknownCommand(t.err) {
			s.noShardedPubSub.Store(true)
			return fmt.Errorf("%w (%w)", errNoShardedPubSub, t.err)
		}
		return t.err
	}

	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		w := t.enqueue() // before looking, so a release after the look wakes it
		ms, err := s.pttlWaiting(ctx, key)
		if err != nil {
			t.dequeue(w, true)
			return s.failed(ctx, err)
		}
		var expired <-chan time.Time
		switch {
		case ms == -2: // free
			t.dequeue(w, false)
			return nil
		case ms >= 0: // held: wake when its TTL runs out, at the latest
			d := time.Duration(ms+1) * time.Millisecond
			if expiry == nil {
				expiry = time.NewTimer(d)
			} else {
				expiry.Reset(d)
			}
			expired = expiry.C
		}
		select {
		case <-w.ch:
			return nil
		case <-t.done:
			return t.err
		case <-ctx.Done():
			t.dequeue(w, true)
			return ctx.Err()
		case <-expired:
			// Expired, or extended meanwhile: look again.
			if t.dequeue(w, false) {
				return nil
			}
		}
	}
}

var errNoShardedPubSub = fmt.Errorf("redis: the server has no sharded pub/sub (Redis 7 or later), so WaitRelease cannot be notified of releases: %w", errors.ErrUnsupported)

func isUnknownCommand(err error) bool {
	var e *rueidis.RedisError
	return errors.As(err, &e) && strings.HasPrefix(e.Error(), "ERR unknown command")
}

// hub holds the subscriptions of every Store in the process, so that
// stores sharing a client and a prefix share subscriptions too (two
// subscriptions to one channel on one connection would end each other).
var hub = subscriptions{topics: make(map[topicKey]*topic)}

// subscriptions shares one subscription per client and channel among the
// callers waiting on it.
type subscriptions struct {
	mu     sync.Mutex
	topics map[topicKey]*topic
}

type topicKey struct {
	owner   any // the client, or the store when the client is not comparable
	channel string
}

// topic is one subscription and its waiters.
type topic struct {
	client  rueidis.Client
	key     topicKey
	refs    int  // callers using it; guarded by subscriptions.mu
	closing bool // no longer to be joined; guarded by subscriptions.mu
	cancel  context.CancelFunc

	subscribed atomic.Bool
	readyOnce  sync.Once
	ready      chan struct{} // closed once subscribed, or when done
	done       chan struct{} // closed when the subscription has ended
	err        error         // why it ended, set before done is closed

	mu     sync.Mutex
	queue  []*waiter // callers waiting for a release, longest first
	broken error     // the connection's error, if it broke
}

// waiter is one caller waiting for a release.
type waiter struct {
	ch    chan struct{} // closed when a release wakes it
	woken bool          // guarded by topic.mu
}

// unsubscribeTimeout bounds the SUNSUBSCRIBE sent when a subscription is
// dropped; it delays no caller, only the end of the subscription.
const unsubscribeTimeout = 2 * time.Second

// join returns the subscription to channel through client, starting it
// if no caller uses it yet; its ready channel says when the server has
// confirmed it. The caller must leave it.
func (h *subscriptions) join(ctx context.Context, client rueidis.Client, owner any, channel string) (*topic, error) {
	k := topicKey{owner, channel}
	for {
		h.mu.Lock()
		t := h.topics[k]
		if t != nil && t.closing {
			// Wait for it to end: a new subscription to the same channel
			// on the same connection would be ended by its SUNSUBSCRIBE.
			h.mu.Unlock()
			select {
			case <-t.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if t == nil {
			t = h.subscribe(client, k)
			h.topics[k] = t
		}
		t.refs++
		h.mu.Unlock()
		return t, nil
	}
}

// leave releases a caller's use of t; the last one out ends it.
func (h *subscriptions) leave(t *topic) {
	h.mu.Lock()
	t.refs--
	if t.refs == 0 && !t.closing {
		t.closing = true
		t.cancel()
	}
	h.mu.Unlock()
}

// subscribe starts the subscription of a new topic. Called with mu held.
func (h *subscriptions) subscribe(client rueidis.Client, k topicKey) *topic {
	ctx, cancel := context.WithCancel(context.Background())
	t := &topic{
		client: client,
		key:    k,
		cancel: cancel,
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	ctx = rueidis.WithOnSubscriptionHook(ctx, t.confirmed)
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, c rueidis.CommandClient) error {
		return t.returned(ctx, err, c)
	})
	go h.receive(ctx, t)
	return t
}

// receive runs the subscription until it is canceled or breaks.
func (h *subscriptions) receive(ctx context.Context, t *topic) {
	c := t.client
	err := c.Receive(ctx, c.B().Ssubscribe().Channel(t.key.channel).Build(), func(rueidis.PubSubMessage) { t.wakeOne() })
	t.mu.Lock()
	broken := t.broken
	t.mu.Unlock()
	switch {
	case broken != nil:
		err = fmt.Errorf("redis: subscription to releases: %w", broken)
	case ctx.Err() != nil:
		err = nil // dropped by its last caller
	case err == nil:
		err = errors.New("redis: subscription to releases ended by the server (the slot moved?)")
	default:
		err = fmt.Errorf("redis: subscription to releases: %w", err)
	}
	t.err = err
	h.mu.Lock()
	t.closing = true
	if h.topics[t.key] == t {
		delete(h.topics, t.key)
	}
	h.mu.Unlock()
	t.cancel()
	close(t.done)
	t.readyOnce.Do(func() { close(t.ready) })
}

// confirmed is called by the client, on its reader goroutine, for every
// (un)subscription confirmation of the topic's channel.
func (t *topic) confirmed(s rueidis.PubSubSubscription) {
	if s.Kind != "ssubscribe" || s.Channel != t.key.channel {
		return
	}
	if t.subscribed.Swap(true) {
		// Subscribed again (the client re-sent SSUBSCRIBE, after a
		// redirect say): a release may have happened in between, so let
		// the callers look again.
		t.wakeAll()
		return
	}
	t.readyOnce.Do(func() { close(t.ready) })
}

// returned is called each time the client's Receive returns from one
// connection, with a client on that connection. If the connection broke,
// or the server refused the subscription, it ends the topic at once, so
// that its callers get the error instead of waiting while the client
// resubscribes in the background. Otherwise the topic was dropped, and it
// unsubscribes on the server — also if the confirmation had not arrived
// yet, as the SSUBSCRIBE may still be applied.
func (t *topic) returned(ctx context.Context, err error, c rueidis.CommandClient) error {
	if err != nil && ctx.Err() == nil {
		t.mu.Lock()
		t.broken = err
		t.mu.Unlock()
		t.cancel()
		return err
	}
	uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	_ = c.Do(uctx, c.B().Sunsubscribe().Channel(t.key.channel).Build())
	cancel()
	return err
}

// enqueue adds a waiter at the end of the queue.
func (t *topic) enqueue() *waiter {
	w := &waiter{ch: make(chan struct{})}
	t.mu.Lock()
	t.queue = append(t.queue, w)
	t.mu.Unlock()
	return w
}

// dequeue removes w from the queue and reports whether a release had
// woken it. A woken waiter that leaves without using the wake (its caller
// will not try to acquire: passOn) hands it to the next waiter.
func (t *topic) dequeue(w *waiter, passOn bool) (woken bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.woken {
		if passOn {
			t.wakeOneLocked()
		}
		return true
	}
	for i, x := range t.queue {
		if x == w {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			break
		}
	}
	return false
}

// wakeOne wakes the longest-waiting caller, if any.
func (t *topic) wakeOne() {
	t.mu.Lock()
	t.wakeOneLocked()
	t.mu.Unlock()
}

func (t *topic) wakeOneLocked() {
	if len(t.queue) == 0 {
		return
	}
	w := t.queue[0]
	t.queue[0] = nil
	t.queue = t.queue[1:]
	w.woken = true
	close(w.ch)
}

// wakeAll wakes every waiting caller.
func (t *topic) wakeAll() {
	t.mu.Lock()
	for _, w := range t.queue {
		w.woken = true
		close(w.ch)
	}
	t.queue = nil
	t.mu.Unlock()
}
