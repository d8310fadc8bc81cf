package otelhook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

// storeOutcomes returns the lock.outcome of every lock.store.duration
// point of store op op, and the lock.store.errors count of op.
func (f *fixture) storeOutcomes(t *testing.T, op string) (outcomes []string, errs int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch mt.Name {
			case "lock.store.duration":
				for _, p := range mt.Data.(metricdata.Histogram[float64]).DataPoints {
					if o, _ := p.Attributes.Value("lock.store.op"); o.AsString() == op {
						v, _ := p.Attributes.Value("lock.outcome")
						outcomes = append(outcomes, v.AsString())
					}
				}
			case "lock.store.errors":
				for _, p := range mt.Data.(metricdata.Sum[int64]).DataPoints {
					if o, _ := p.Attributes.Value("lock.store.op"); o.AsString() == op {
						errs += p.Value
					}
				}
			}
		}
	}
	return outcomes, errs
}

// A store call that failed with an error wrapping
// context.DeadlineExceeded (a client's own timeout) while the caller's
// context is alive is a store error: its outcome is "error", it counts in
// lock.store.errors, and its span is an error. Only a store call that
// ended because the caller's context did is "canceled".
func TestStoreTimeoutWithLiveContextIsAnError(t *testing.T) {
	clientTimeout := fmt.Errorf("read tcp: i/o timeout: %w", context.DeadlineExceeded)
	f := newFixture(t)
	m := memory.New(memory.WithName("mem"))
	m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: clientTimeout})
	l, err := lock.NewSingle(m, &lock.Options{Hook: f.hook})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(context.Background(), "r", time.Minute); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("TryLock(r) on a store that timed out = %v; want ErrUnavailable", err)
	}
	outcomes, errs := f.storeOutcomes(t, "acquire")
	if len(outcomes) != 1 || outcomes[0] != "error" || errs != 1 {
		t.Errorf("acquire failed with %v, caller's context alive: lock.store.duration outcomes %q, lock.store.errors %d; want [error] and 1", clientTimeout, outcomes, errs)
	}
	var spans int
	for _, s := range f.spans.Ended() {
		if s.Name() != "lock.store.acquire" {
			continue
		}
		spans++
		if s.Status().Code != codes.Error {
			t.Errorf("span lock.store.acquire of %v has status %v; want Error", clientTimeout, s.Status().Code)
		}
	}
	if spans != 1 {
		t.Errorf("%d lock.store.acquire spans; want 1", spans)
	}

	// The caller's context ended: the same error is the call's end.
	f = newFixture(t)
	ctx, cancel := context.WithCancel(f.hook.Begin(context.Background(), "trylock", "r"))
	cancel()
	f.hook.Observe(ctx, lock.Event{Kind: lock.EventStoreCall, Op: "trylock", Resource: "r", Store: "mem", StoreOp: "acquire", Err: clientTimeout})
	outcomes, errs = f.storeOutcomes(t, "acquire")
	if len(outcomes) != 1 || outcomes[0] != "canceled" || errs != 0 {
		t.Errorf("acquire failed with %v after the caller's context ended: lock.store.duration outcomes %q, lock.store.errors %d; want [canceled] and 0", clientTimeout, outcomes, errs)
	}
}
