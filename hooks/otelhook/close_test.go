package otelhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/hooks/otelhook"
	"github.com/lockkit/lock/stores/memory"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Two hooks on one provider each report their own locks under lock.held;
// once one is closed, the provider reports the other's alone.
func TestCloseTwoHooksOneProvider(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := context.Background()
	store := memory.New()
	var hooks []*otelhook.Hook
	for i, name := range []string{"a", "b"} {
		h, err := otelhook.New(nil, mp)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, h)
		l, err := lock.NewSingle(store, &lock.Options{Hook: h})
		if err != nil {
			t.Fatal(err)
		}
		for j := range i + 1 { // hook a holds one lock, hook b two
			if _, err := l.TryLock(ctx, fmt.Sprintf("%s%d", name, j), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := &fixture{reader: reader}
	if got := f.sums(t)["lock.held"]; got != 3 {
		t.Fatalf("lock.held = %d with two open hooks holding 1 and 2 locks; want 3", got)
	}
	if err := hooks[0].Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if got := f.sums(t)["lock.held"]; got != 2 {
		t.Errorf("lock.held = %d after Close of the hook holding 1 lock; want 2, the other hook's", got)
	}
	if err := hooks[0].Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if err := new(otelhook.Hook).Close(); err != nil {
		t.Errorf("zero Hook's Close() = %v; want nil", err)
	}
}
