package goredis

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

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock/internal/redisproto"
)

// WaitRelease implements [lock.Waiter], speaking the rueidis store's
// protocol: it subscribes (SSUBSCRIBE, on the node that holds the lock)
// to a shard channel of its own, then gets in line on the server — one
// script reads the lock's PTTL and, if the lock is held, appends the
// subscription to the resource's waiters' queue. If the resource is free
// it returns nil at once; otherwise it blocks until a Release — by this
// store or by a rueidis one — wakes it, the lock's TTL runs out (it then
// looks again, as the lock may have been extended), or ctx ends. Getting
// in line before looking means no release that happens after the call
// began is missed.
//
// A release wakes exactly one caller across every process: it pops the
// first subscription in line and publishes on that subscription's channel
// alone. Callers of one process waiting for the same resource through one
// client share one subscription, which wakes them longest-waiting first.
// A wake that finds no caller left is handed on to the next subscription
// in line. The subscription is dropped (out of the queue, and its
// connection closed) a moment after the last caller returns. Expiry wakes
// every caller.
//
// go-redis gives every subscription a connection of its own: a process
// holds one connection per resource it is waiting for, besides the
// client's pool. If the subscription breaks, waiting callers get an error
// at once; the lockers then fall back to their retry delay. Sharded
// pub/sub needs Redis 7; on older servers WaitRelease returns an error
// matching errors.ErrUnsupported, and the lockers sleep instead.
func (s *Store) WaitRelease(ctx context.Context, resource string) error {
	if err := s.check(ctx, resource, "-", 1); err != nil {
		return err
	}
	if s.noShardedPubSub.Load() {
		return errNoShardedPubSub
	}
	key := redisproto.LockKey(s.prefix, resource)
	t := hub.join(s.client, s.subOwner, key)
	defer hub.leave(t)

	// A first look while a new subscription is being made: a free
	// resource or a failing server is known at once. If held, look again
	// once subscribed, so that a release in between is not missed.
	select {
	case <-t.ready:
	default:
		ms, err := s.read(ctx, key, "pttl", key).Int64()
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
		ms, err := s.eval(ctx, &redisproto.Wait, []string{key, redisproto.WaitersOf(key)}, t.id, redisproto.QueueMargin).Int64()
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

var errNoShardedPubSub = fmt.Errorf("goredis: the server has no sharded pub/sub (Redis 7 or later), so WaitRelease cannot be notified of releases: %w", errors.ErrUnsupported)

func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ERR unknown command")
}

// hub holds the subscriptions of every Store in the process, so that
// stores sharing a client share subscriptions too (see Store.subOwner).
var hub = subscriptions{topics: make(map[topicKey]*topic)}

// subscriptions shares one subscription per client and lock among the
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
	client  redis.UniversalClient
	key     topicKey
	id      string // names the subscription in the waiters' queue
	channel string // the subscription's own shard channel: see redisproto.ChannelOf
	refs    int    // callers using it; guarded by subscriptions.mu
	idle    int    // times refs fell to 0; guarded by subscriptions.mu

	subscribed atomic.Bool
	readyOnce  sync.Once
	ready      chan struct{} // closed once subscribed, or when done
	done       chan struct{} // closed when the subscription has ended
	err        error         // why it ended, set before done is closed

	line redisproto.Line // this process's callers waiting for a release

	mu      sync.Mutex
	ps      *redis.PubSub // the subscription, once made
	dropped bool          // its last caller left: to be closed
}

// scriptTimeout bounds the scripts a subscription runs on its own (out
// of line when dropped, handing a wake on); they delay no caller.
const scriptTimeout = 2 * time.Second

// linger is how long a subscription outlives its last caller: the
// lockers leave between attempts and come back a moment later, and a
// subscription that stays keeps its place in the waiters' queue.
const linger = 100 * time.Millisecond

// join returns the subscription to releases of lockKey through client,
// starting it if no caller uses it; its ready channel says when the
// server has confirmed it. The caller must leave it.
func (h *subscriptions) join(client redis.UniversalClient, owner any, lockKey string) *topic {
	k := topicKey{owner, lockKey}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[k]
	if t == nil {
		id := subscriptionID()
		t = &topic{
			client:  client,
			key:     k,
			id:      id,
			channel: redisproto.ChannelOf(lockKey, id),
			ready:   make(chan struct{}),
			done:    make(chan struct{}),
		}
		h.topics[k] = t
		go h.receive(t)
	}
	t.refs++
	return t
}

// leave releases a caller's use of t; the subscription is dropped linger
// after the last caller left, unless another joined meanwhile.
func (h *subscriptions) leave(t *topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.refs--
	if t.refs > 0 {
		return
	}
	t.idle++
	idle := t.idle
	time.AfterFunc(linger, func() {
		h.mu.Lock()
		drop := t.refs == 0 && t.idle == idle && h.topics[t.key] == t
		if drop {
			delete(h.topics, t.key) // a caller from now on makes a new one
		}
		h.mu.Unlock()
		if drop {
			t.drop()
		}
	})
}

// receive makes the subscription and runs it until it is dropped or
// breaks.
func (h *subscriptions) receive(t *topic) {
	ctx := context.Background()
	ps := t.client.SSubscribe(ctx, t.channel)
	t.mu.Lock()
	t.ps = ps
	dropped := t.dropped
	t.mu.Unlock()
	var err error
	if dropped {
		_ = ps.Close()
	} else {
		err = t.run(ctx, ps)
	}
	t.mu.Lock()
	dropped = t.dropped
	t.mu.Unlock()
	switch {
	case dropped:
		err = nil
	case err == nil:
		err = errors.New("goredis: subscription to releases ended by the server (the slot moved?)")
	default:
		err = fmt.Errorf("goredis: subscription to releases: %w", err)
	}
	t.err = err
	h.mu.Lock()
	if h.topics[t.key] == t {
		delete(h.topics, t.key)
	}
	h.mu.Unlock()
	if !dropped {
		_ = ps.Close()
	}
	close(t.done)
	t.readyOnce.Do(func() { close(t.ready) })
}

// run reads the subscription's messages until it ends: an error, or nil
// if the server ended the subscription.
func (t *topic) run(ctx context.Context, ps *redis.PubSub) error {
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Channel != t.channel {
				continue
			}
			switch m.Kind {
			case "ssubscribe":
				t.confirmed()
			case "sunsubscribe":
				return nil
			}
		case *redis.Message:
			if m.Channel == t.channel {
				t.line.WakeOne(t.handOn)
			}
		}
	}
}

// confirmed is called for every subscription confirmation of the topic's
// channel.
func (t *topic) confirmed() {
	if t.subscribed.Swap(true) {
		// Subscribed again: a release may have happened in between, so
		// let the callers look again.
		t.line.WakeAll()
		return
	}
	t.readyOnce.Do(func() { close(t.ready) })
}

// drop ends a subscription its last caller left: out of line first, so
// that no release wakes a subscription that is gone (a wake that lands
// meanwhile is handed on: see redisproto.Line.WakeOne), then its
// connection is closed.
func (t *topic) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	_ = runScript(ctx, t.client, &redisproto.Leave, []string{redisproto.WaitersOf(t.key.lock)}, t.id)
	t.mu.Lock()
	t.dropped = true
	ps := t.ps
	t.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}

// handOn passes a wake this subscription cannot use to the next
// subscription in line, if the lock is still free, in a goroutine of its
// own: wakes arrive on the subscription's reader.
func (t *topic) handOn() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
		defer cancel()
		_ = runScript(ctx, t.client, &redisproto.Pass, []string{t.key.lock, redisproto.WaitersOf(t.key.lock)})
	}()
}

// runScript runs sc through client, once, sending it in full if the
// server does not know it. It is for the subscriptions' own scripts, run
// in the background with a bounded ctx.
func runScript(ctx context.Context, client redis.UniversalClient, sc *redisproto.Script, keys []string, args ...any) error {
	a := scriptArgs("evalsha", sc.SHA, sc.NKeys, keys, args)
	cmd := redis.NewCmd(ctx, a...)
	err := client.Process(ctx, wrap(cmd))
	if isNoScript(err) {
		a[0], a[1] = "eval", sc.Src
		cmd = redis.NewCmd(ctx, a...)
		err = client.Process(ctx, wrap(cmd))
	}
	return err
}

// subscriptionID returns a name for a subscription, unique across
// processes, for the waiters' queue.
func subscriptionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
