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

// A Lock that failed because its store failed is "unavailable", and its
// span an error, even when the store's error wraps
// context.DeadlineExceeded (a client's own timeout, such as a connect
// timeout) while the caller's context is alive: the outcome is the
// call's (lock.Error's Err), not a word of one store's failure.
func TestOutcomeOfStoreTimeoutIsUnavailable(t *testing.T) {
	f := newFixture(t)
	m := memory.New(memory.WithName("mem"))
	m.Inject(memory.Fault{Ops: memory.OpAcquire, Err: fmt.Errorf("dial tcp: connect timeout: %w", context.DeadlineExceeded)})
	l, err := lock.NewSingle(m, &lock.Options{Hook: f.hook})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryLock(context.Background(), "r", time.Minute)
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("TryLock(r) on a failing store = %v; want ErrUnavailable", err)
	}

	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "lock.acquire.duration" {
				continue
			}
			for _, p := range mt.Data.(metricdata.Histogram[float64]).DataPoints {
				o, _ := p.Attributes.Value("lock.outcome")
				outcomes = append(outcomes, o.AsString())
			}
		}
	}
	if len(outcomes) != 1 || outcomes[0] != "unavailable" {
		t.Errorf("lock.acquire.duration outcomes = %q; want [unavailable]", outcomes)
	}
	for _, s := range f.spans.Ended() {
		if s.Name() == "lock.trylock" && s.Status().Code != codes.Error {
			t.Errorf("span lock.trylock of %v has status %v; want Error", err, s.Status().Code)
		}
	}
}
