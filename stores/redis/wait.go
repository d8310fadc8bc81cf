package redis

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/redisproto"
)

// WaitRelease implements [lock.Waiter]. It subscribes (SSUBSCRIBE, on
// the node that holds the lock) to a shard channel of its own, then gets
// in line on the server: one script reads the lock's PTTL and, if the
// lock is held, appends the subscription to the resource's waiters'
// queue. If the resource is free it returns nil at once; otherwise it
// blocks until a Release wakes it, the lock's TTL runs out (it then looks
// again, as the lock may have been extended), or ctx ends. Getting in
// line before looking means no release that happens after the call began
// is missed.
//
// A release wakes exactly one caller across every process: it pops the
// first subscription in line and publishes on that subscription's channel
// alone, so waiters take turns in the order they got in line and nobody
// else hears of it — no stampede, and no message to every waiting
// process. Callers of one process waiting for the same resource share one
// subscription, which wakes them longest-waiting first. A wake that finds
// no caller left (its ctx ended meanwhile) is handed on to the next
// subscription in line. The subscription is dropped (SUNSUBSCRIBE, and
// out of the queue) a moment after the last caller returns; nothing stays
// behind but entries of the queue, which expires a second after the lock
// would. Expiry wakes every caller.
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

	// A first look while a new subscription is being made: a free
	// resource or a failing server is known at once. If held, look again
	// once subscribed, so that a release in between is not missed. (A
	// subscription that is already there needs no first look.)
	select {
	case <-t.ready:
	default:
		ms, err := s.pttlWaiting(ctx, key)
		switch {
		case err != nil:
			return s.failed(ctx, err)
		case ms == -2:
			return nil
		}
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
		// In line before looking, here and on the server, so that a
		// release after the look wakes this caller.
		w := t.line.Join()
		ms, err := s.register(ctx, key, t.id)
		if err != nil {
			t.line.Leave(w, true, t.handOn)
			return s.failed(ctx, err)
		}
		var expired <-chan time.Time
		switch {
		case ms == -2: // free
			t.line.Leave(w, false, t.handOn)
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
		case <-w.C:
			return nil
		case <-t.done:
			return t.err
		case <-ctx.Done():
			t.line.Leave(w, true, t.handOn)
			return ctx.Err()
		case <-expired:
			// Expired, or extended meanwhile: look again.
			if t.line.Leave(w, false, t.handOn) {
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
	owner any    // the client, or the store when the client is not comparable
	lock  string // the lock key
}

// topic is one subscription and its waiters.
type topic struct {
	client  rueidis.Client
	key     topicKey
	id      string // names the subscription in the waiters' queue
	channel string // the subscription's own shard channel: see redisproto.ChannelOf
	refs    int    // callers using it; guarded by subscriptions.mu
	idle    int    // times refs fell to 0; guarded by subscriptions.mu
	closing bool   // no longer to be joined; guarded by subscriptions.mu
	cancel  context.CancelFunc

	subscribed atomic.Bool
	readyOnce  sync.Once
	ready      chan struct{} // closed once subscribed, or when done
	done       chan struct{} // closed when the subscription has ended
	err        error         // why it ended, set before done is closed

	line redisproto.Line // this process's callers waiting for a release

	mu     sync.Mutex
	broken error // the connection's error, if it broke
}

// unsubscribeTimeout bounds the SUNSUBSCRIBE sent when a subscription is
// dropped; it delays no caller, only the end of the subscription.
const unsubscribeTimeout = 2 * time.Second

// join returns the subscription to channel through client, starting it
// if no caller uses it yet; its ready channel says when the server has
// confirmed it. The caller must leave it.
func (h *subscriptions) join(ctx context.Context, client rueidis.Client, owner any, lockKey string) (*topic, error) {
	k := topicKey{owner, lockKey}
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

// leave releases a caller's use of t. The subscription ends linger after
// the last caller left, unless another joined meanwhile: the lockers
// leave between attempts and come back a moment later, and a
// subscription that stays keeps its place in the waiters' queue.
func (h *subscriptions) leave(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.refs--
	if t.refs > 0 || t.closing {
		return
	}
	t.idle++
	idle := t.idle
	time.AfterFunc(linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if t.refs == 0 && t.idle == idle && !t.closing {
			t.closing = true
			t.cancel()
		}
	})
}

// linger is how long a subscription outlives its last caller.
const linger = 100 * time.Millisecond

// subscribe starts the subscription of a new topic. Called with mu held.
func (h *subscriptions) subscribe(client rueidis.Client, k topicKey) *topic {
	ctx, cancel := context.WithCancel(context.Background())
	id := subscriptionID()
	t := &topic{
		client:  client,
		key:     k,
		id:      id,
		channel: redisproto.ChannelOf(k.lock, id),
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
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
	err := c.Receive(ctx, c.B().Ssubscribe().Channel(t.channel).Build(), func(rueidis.PubSubMessage) { t.line.WakeOne(t.handOn) })
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
	if s.Kind != "ssubscribe" || s.Channel != t.channel {
		return
	}
	if t.subscribed.Swap(true) {
		// Subscribed again (the client re-sent SSUBSCRIBE, after a
		// redirect say): a release may have happened in between, so let
		// the callers look again.
		t.line.WakeAll()
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
	// Out of line first, so that no release wakes a subscription that is
	// gone (a wake that lands here meanwhile is handed on: see
	// redisproto.Line.WakeOne).
	keys, args := [2]string{waitersOf(t.key.lock)}, [3]string{t.id}
	_ = runScript(uctx, c, &leaveScript, &keys, &args)
	_ = c.Do(uctx, c.B().Sunsubscribe().Channel(t.channel).Build())
	cancel()
	return err
}

// handOn passes a wake this subscription cannot use to the next
// subscription in line, if the lock is still free. It runs in a goroutine
// of its own: wakes arrive on the client's reader goroutine, which must
// not wait for a command.
func (t *topic) handOn() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
		defer cancel()
		keys, args := [2]string{t.key.lock, waitersOf(t.key.lock)}, [3]string{}
		_ = runScript(ctx, t.client, &passScript, &keys, &args)
	}()
}

// subscriptionID returns a name for a subscription, unique across
// processes, for the waiters' queue.
func subscriptionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// register puts subscription id in line for the next release of the lock
// at key, and returns the lock's PTTL (see waitScript).
func (s *Store) register(ctx context.Context, key, id string) (int64, error) {
	keys, args := [2]string{key, waitersOf(key)}, [3]string{id, redisproto.QueueMargin}
	full := false
	build := func() rueidis.Completed { return scriptCmd(s.client.B(), &waitScript, full, &keys, &args) }
	r := s.doQueued(ctx, build)
	if isNoScript(r.Error()) {
		full = true
		r = s.doQueued(ctx, build)
	}
	return r.AsInt64()
}

// runScript runs sc on client, sending it in full if the server does not
// know it.
func runScript(ctx context.Context, client rueidis.CommandClient, sc *script, keys *[2]string, args *[3]string) error {
	err := client.Do(ctx, scriptCmd(client.B(), sc, false, keys, args)).Error()
	if isNoScript(err) {
		err = client.Do(ctx, scriptCmd(client.B(), sc, true, keys, args)).Error()
	}
	return err
}
