package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultproxy"
)

// A holder in lock.Run is cut off from every member — fault proxies hold
// its traffic both ways — so it cannot extend. Run must cancel its
// function by the end of the lock's validity; a client that can reach the
// cluster gets the lock once the holder's lease has expired, which is
// later, and with a higher fence. The positive control's holder believes
// extensions that never reach etcd: it keeps its claim past the lease,
// and the overlap checker must report it.
func TestPartitionedHolder(t *testing.T) {
	twins(t, "partitioned-holder", "control-partitioned-holder-blind-extension", func(t *testing.T, s *scenario) {
		const ttl, every = 2 * time.Second, 400 * time.Millisecond
		proxies, addrs := s.proxies()
		rec := contention.NewRecorder()
		hl, err := s.locker(addrs...)
		if err != nil {
			t.Fatal(err)
		}
		if s.control {
			hl = blindExtension{hl}
		}
		holder := rec.Locker(0, hl)
		ol, err := s.locker()
		if err != nil {
			t.Fatal(err)
		}
		other := rec.Locker(1, ol)

		var held lock.Lock
		var healed func()
		canceledAt := time.Duration(-1)
		cut := make(chan struct{})
		next := make(chan struct{}) // closed once the other client holds the lock
		ran := make(chan error, 1)
		go func() {
			ran <- lock.Run(s.ctx, holder, "r", ttl, func(ctx context.Context, l lock.Lock) error {
				held = l
				// One extension through the healthy link, then the cut.
				for extended(rec, l.Token) == 0 {
					time.Sleep(10 * time.Millisecond)
				}
				heal := rec.Fault("partition the holder")
				for _, p := range proxies {
					p.Set(faultproxy.ToServer, faultproxy.Hold())
					p.Set(faultproxy.ToClient, faultproxy.Hold())
				}
				healed = heal
				close(cut)
				select {
				case <-ctx.Done():
					canceledAt = rec.Now()
				case <-next:
					// The control's holder is never told: it works on
					// for a while, believing it holds the lock.
					time.Sleep(every)
				}
				return nil
			}, lock.ExtendEvery(every))
		}()
		<-cut
		took, err := other.Lock(s.ctx, "r", ttl)
		if err != nil {
			t.Fatalf("Lock(r) by a client that reaches the cluster = %v", err)
		}
		tookAt := rec.Now()
		close(next)
		if err := other.Unlock(s.ctx, took); err != nil {
			t.Errorf("Unlock(r) by the other client = %v", err)
		}
		for _, p := range proxies {
			p.Heal()
		}
		healed()
		runErr := <-ran

		rep := contention.Analyze(s.name, "etcd-3", rec)
		rep.Add("extensions_before_cut", fmt.Sprint(extended(rec, held.Token)))
		if canceledAt >= 0 {
			rep.AddMillis("canceled_before_next_holder_ms", tookAt-canceledAt)
		}
		if !s.control {
			if !errors.Is(runErr, lock.ErrLost) {
				t.Errorf("Run of the cut-off holder = %v; want ErrLost", runErr)
			}
			if canceledAt < 0 || canceledAt >= tookAt {
				t.Errorf("Run canceled its function at %v, the next holder got the lock at %v; want the function canceled first", canceledAt, tookAt)
			}
			if took.Fence <= held.Fence {
				t.Errorf("the next holder's fence is %d, the cut-off holder's %d; want it higher", took.Fence, held.Fence)
			}
		}
		s.finish(rep, ttl+2*time.Second)
	})
}

// extended counts the successful extensions of the lock of token.
func extended(rec *contention.Recorder, token string) int {
	n := 0
	for _, op := range rec.Ops() {
		if op.Kind == contention.KindExtend && op.Token == token && op.Outcome == contention.OK {
			n++
		}
	}
	return n
}

// blindExtension is a broken locker whose extensions never reach the
// store: each reports the lock valid for another TTL.
type blindExtension struct{ lock.Locker }

func (b blindExtension) Extend(_ context.Context, l lock.Lock, ttl time.Duration) (lock.Lock, error) {
	l.ValidUntil = time.Now().Add(ttl * 98 / 100)
	return l, nil
}
