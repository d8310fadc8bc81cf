package goredis

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// The tests below lose the reply of a command that the server ran, with
// a proxy dropping what the server sends, and check that the outcome is
// never reported as a lock outcome it is not.

// lossy is a client whose connections go through a proxy, with a short
// read timeout and go-redis' own retries on. Every dial after the first
// heals the proxy, so that a retry on a new connection gets through.
type lossy struct {
	srv    *redistest.Server
	proxy  *faultproxy.Proxy
	client *redis.Client
	store  *Store
	dials  atomic.Int32
}

func newLossy(t *testing.T) *lossy {
	t.Helper()
	l := &lossy{srv: redistest.Start(t)}
	p, err := faultproxy.New(l.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	l.proxy = p
	l.client = redis.NewClient(&redis.Options{
		Addr:                  p.Addr(),
		ReadTimeout:           300 * time.Millisecond,
		MaxRetries:            3,
		MinRetryBackoff:       time.Millisecond,
		MaxRetryBackoff:       2 * time.Millisecond,
		ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if l.dials.Add(1) > 1 {
				p.Heal()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	t.Cleanup(func() { _ = l.client.Close() })
	if l.store, err = New(l.client, WithPrefix("lossy:")); err != nil {
		t.Fatal(err)
	}
	// Load the scripts, so that a lost reply is that of a script that ran
	// rather than of a NOSCRIPT.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.store.AcquireFenced(ctx, "warm", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.store.Release(ctx, "warm", "tok"); err != nil {
		t.Fatal(err)
	}
	return l
}

// loseReplies makes the next replies get lost, on a connection the
// client already has.
func (l *lossy) loseReplies(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := l.client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l.dials.Store(1)
	l.proxy.Set(faultproxy.ToClient, faultproxy.Drop())
}

func (l *lossy) get(t *testing.T, key string) string {
	t.Helper()
	v, err := l.srv.Do("GET", key).ToString()
	if err != nil && !errors.Is(err, context.Canceled) {
		return ""
	}
	return v
}

// TestLostReplyIsNotAnOutcome: with the store's commands marked not to be
// retried, a lost reply is an error — the client does not send the
// command again (no new connection is dialed) and the store does not
// pass the outcome off as lock.ErrNotAcquired or lock.ErrNotHeld,
// although the server did take, or release, the lock.
func TestLostReplyIsNotAnOutcome(t *testing.T) {
	l := newLossy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	outcome := func(err error) bool { return errors.Is(err, lock.ErrNotAcquired) || errors.Is(err, lock.ErrNotHeld) }

	l.loseReplies(t, ctx)
	err := l.store.Acquire(ctx, "a", "tok", time.Minute)
	if err == nil || outcome(err) {
		t.Errorf("Acquire with its reply lost = %v; want a transport error", err)
	}
	if n := l.dials.Load(); n != 1 {
		t.Errorf("the client dialed %d more times after the lost reply; want none (no retry)", n-1)
	}
	if v := l.get(t, "lossy:{a}"); v != "tok" {
		t.Fatalf("lock value on the server = %q; want %q: the server should have run the SET", v, "tok")
	}

	l.loseReplies(t, ctx)
	if _, err := l.store.AcquireFenced(ctx, "f", "tok", time.Minute); err == nil || outcome(err) {
		t.Errorf("AcquireFenced with its reply lost = %v; want a transport error", err)
	}

	l.loseReplies(t, ctx)
	if err := l.store.Release(ctx, "a", "tok"); err == nil || outcome(err) {
		t.Errorf("Release with its reply lost = %v; want a transport error", err)
	}
	if v := l.get(t, "lossy:{a}"); v != "" {
		t.Errorf("lock value after the release = %q; want none: the server should have run it", v)
	}
	if n := l.dials.Load(); n != 1 {
		t.Errorf("the client dialed %d more times after the lost replies; want none (no retry)", n-1)
	}
}

// TestResentCommandsAreResolvedByToken: should the client send a command
// again after its reply was lost (here: go-redis' own retries, with the
// store's NoRetry mark off), an acquisition that finds the lock held
// under its token took it on the first send and succeeds, with that
// send's fence; a release that finds nothing to release reports an
// unknown outcome, not lock.ErrNotHeld.
func TestResentCommandsAreResolvedByToken(t *testing.T) {
	letClientRetry.Store(true)
	t.Cleanup(func() { letClientRetry.Store(false) })
	l := newLossy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l.loseReplies(t, ctx)
	if err := l.store.Acquire(ctx, "a", "tok", time.Minute); err != nil {
		t.Errorf("Acquire sent twice, the first taking the lock = %v; want nil", err)
	}
	if n := l.dials.Load(); n < 2 {
		t.Fatalf("the client did not send the command again (dials %d); the test tests nothing", n)
	}

	l.loseReplies(t, ctx)
	fence, err := l.store.AcquireFenced(ctx, "f", "tok", time.Minute)
	if err != nil {
		t.Errorf("AcquireFenced sent twice, the first taking the lock = %v; want nil", err)
	}
	if v := l.get(t, FenceKey); v != strconv.FormatUint(fence, 10) {
		t.Errorf("AcquireFenced sent twice returned fence %d; the counter holds %s", fence, v)
	}

	// Held under another token, a re-sent acquisition is still refused.
	if err := l.srv.Do("SET", "lossy:{o}", "other", "PX", "60000").Error(); err != nil {
		t.Fatal(err)
	}
	l.loseReplies(t, ctx)
	if err := l.store.Acquire(ctx, "o", "tok", time.Minute); !errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("Acquire sent twice of a lock held by another = %v; want lock.ErrNotAcquired", err)
	}

	l.loseReplies(t, ctx)
	err = l.store.Release(ctx, "a", "tok")
	if err == nil || errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, redisstore.ErrUnknownOutcome) {
		t.Errorf("Release sent twice, the first releasing = %v; want an unknown outcome, not lock.ErrNotHeld", err)
	}
	if v := l.get(t, "lossy:{a}"); v != "" {
		t.Errorf("lock value after the release = %q; want none", v)
	}
}
