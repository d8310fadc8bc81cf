package faultsuite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/contention"
)

// starve runs the rest of the test with GOMAXPROCS=1 and a goroutine that
// spins without pause, competing with everything else for the one
// processor. It returns the function that ends it (safe to call twice).
func starve() (stop func()) {
	prev := runtime.GOMAXPROCS(1)
	done := make(chan struct{})
	exited := make(chan struct{})
	var sink atomic.Int64
	go func() {
		defer close(exited)
		for n := int64(0); ; n++ {
			select {
			case <-done:
				sink.Store(n)
				return
			default:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
			runtime.GOMAXPROCS(prev)
		})
	}
}

// countExtends counts the recorded extensions of token, and those that
// began at or after from and ended by to.
func countExtends(ops []contention.Op, token string, from, to time.Duration) (all, between int) {
	for _, op := range ops {
		if op.Kind == contention.KindExtend && op.Token == token {
			all++
			if op.Start >= from && op.End <= to {
				between++
			}
		}
	}
	return all, between
}

// Auto-extension under CPU starvation: one processor, shared with a
// goroutine that never yields on its own. A healthy holder (Run, TTL
// 600ms, extended every 200ms) keeps its lock for two seconds; then its
// lock is deleted on the server behind its back, and the very next
// extension reports the loss (Run cancels the function's context).
func TestAutoExtensionUnderCPUStarvation(t *testing.T) {
	const ttl, every = 600 * time.Millisecond, 200 * time.Millisecond
	s := begin(t, "auto-extension-cpu-starvation", "redis")
	servers := s.redisServers(1)
	b, prefix := s.redisBackend("redis", servers)
	obs := s.nodes(servers)[0]
	rec := contention.NewRecorder()
	holder := rec.Locker(0, b.locker(t, 0))
	stop := starve()
	defer stop()

	// Healthy: the lock is kept for the whole function.
	var token string
	err := lock.Run(s.ctx, holder, "healthy", ttl, func(ctx context.Context, l lock.Lock) error {
		token = l.Token
		select {
		case <-time.After(2 * time.Second):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, lock.ExtendEvery(every))
	if err != nil {
		t.Errorf("Run of a healthy holder under CPU starvation = %v; want the lock kept", err)
	}
	healthyExtends, _ := countExtends(rec.Ops(), token, 0, rec.Now())

	// Forced loss: reported by the first extension after it.
	var deleted, detected time.Duration
	err = lock.Run(s.ctx, holder, "lost", ttl, func(ctx context.Context, l lock.Lock) error {
		token = l.Token
		time.Sleep(every + every/2)
		deleted = rec.Now()
		if err := obs.do("DEL", redisKey(prefix, "lost")).Error(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			detected = rec.Now()
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the loss was never reported")
		}
	}, lock.ExtendEvery(every))
	if !errors.Is(err, lock.ErrLost) {
		t.Errorf("Run whose lock was deleted = %v; want ErrLost", err)
	}
	stop()
	_, toDetect := countExtends(rec.Ops(), token, deleted, detected)
	if toDetect != 1 {
		t.Errorf("%d extensions between the loss and its report; want 1: the first extension after a loss reports it", toDetect)
	}
	rep := contention.Analyze("auto-extension-cpu-starvation", "redis", rec)
	rep.Add("gomaxprocs", "1")
	rep.Add("healthy_extensions", fmt.Sprint(healthyExtends))
	rep.Add("extensions_to_detect_loss", fmt.Sprint(toDetect))
	rep.AddMillis("loss_detected_ms", detected-deleted)
	s.finish(rep, b.count)
}

// Renewal never outlives unlock: twenty Runs at once, extended every
// 30ms, whose functions end at random. Once Run returns, its lock is gone
// from the servers, no extension of it ends after its release began, and
// no command reaches the servers any more.
func TestRenewalNeverOutlivesUnlock(t *testing.T) {
	for _, n := range []int{1, 3} {
		name := "redis"
		if n > 1 {
			name = fmt.Sprintf("redlock-%d", n)
		}
		t.Run(name, func(t *testing.T) {
			const runs, ttl, every = 20, 300 * time.Millisecond, 30 * time.Millisecond
			s := begin(t, "renewal-never-outlives-unlock", name)
			servers := s.redisServers(n)
			b, prefix := s.redisBackend(name, servers)
			obs := s.nodes(servers)
			rec := contention.NewRecorder()
			locker := rec.Locker(0, b.locker(t, 0))
			var wg sync.WaitGroup
			var mu sync.Mutex
			var problems []string
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resource := fmt.Sprintf("run-%d", i)
					err := lock.Run(s.ctx, locker, resource, ttl, func(ctx context.Context, _ lock.Lock) error {
						time.Sleep(time.Duration(rand.Int64N(int64(200 * time.Millisecond))))
						return nil
					}, lock.ExtendEvery(every))
					held := 0
					for _, o := range obs {
						if n, err := o.do("EXISTS", redisKey(prefix, resource)).AsInt64(); err == nil && n == 1 {
							held++
						}
					}
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						problems = append(problems, fmt.Sprintf("Run(%s) = %v", resource, err))
					}
					if held != 0 {
						problems = append(problems, fmt.Sprintf("%s still held on %d servers after Run returned", resource, held))
					}
				}()
			}
			wg.Wait()
			scripts := func() int64 {
				total := int64(0)
				for _, o := range obs {
					info, err := o.do("INFO", "commandstats").ToString()
					if err != nil {
						t.Fatal(err)
					}
					for _, line := range strings.Split(info, "\n") {
						if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_set:") {
							var calls int64
							fmt.Sscanf(strings.SplitN(line, "calls=", 2)[1], "%d", &calls)
							total += calls
						}
					}
				}
				return total
			}
			before := scripts()
			time.Sleep(5 * every)
			after := scripts()
			for _, p := range problems {
				t.Error(p)
			}
			// No extension of a lock ends after its release began.
			late := 0
			released := map[string]time.Duration{}
			for _, op := range rec.Ops() {
				if op.Kind == contention.KindRelease {
					released[op.Token] = op.Start
				}
			}
			extends := 0
			for _, op := range rec.Ops() {
				if op.Kind == contention.KindExtend {
					extends++
					if r, ok := released[op.Token]; ok && op.End > r {
						late++
					}
				}
			}
			if late != 0 || after != before {
				t.Errorf("%d extensions ended after their release began, %d lock commands reached the servers after every Run returned; want 0 and 0", late, after-before)
			}
			if extends < runs {
				t.Errorf("only %d extensions in %d runs: the runs did not renew their locks", extends, runs)
			}
			rep := contention.Analyze("renewal-never-outlives-unlock", name, rec)
			rep.Add("extensions", fmt.Sprint(extends))
			rep.Add("renewals_after_unlock", fmt.Sprint(late))
			rep.Add("commands_after_return", fmt.Sprint(after-before))
			s.finish(rep, b.count)
		})
	}
}
