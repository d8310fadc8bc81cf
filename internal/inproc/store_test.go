package inproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

type store struct {
	offer
}

type offer = inproc.Offer

func (*store) AcquireStamped(context.Context, uint64, string, string, time.Duration) (uint64, inproc.Instant, time.Duration, error) {
	return 0, 0, 0, nil
}

func (*store) ReleaseStamped(context.Context, string, string) (inproc.Instant, time.Duration, error) {
	return 0, 0, nil
}

func (*store) ExtendStamped(context.Context, uint64, string, string, time.Duration) error {
	return nil
}

func (*store) HeldBy(uint64) []inproc.Held { return nil }

func newStore() *store {
	s := &store{}
	s.offer = inproc.OfferOf(s, s)
	return s
}

// wrapper embeds a store, as a test's call-counting wrapper would: its
// methods may differ from the store's, so it offers nothing.
type wrapper struct{ *store }

func TestOf(t *testing.T) {
	s := newStore()
	if got := inproc.Of(s); got != inproc.Store(s) {
		t.Errorf("Of(store) = %v; want the store", got)
	}
	for _, x := range []any{wrapper{s}, &wrapper{s}, &store{}, nil, 42} {
		if got := inproc.Of(x); got != nil {
			t.Errorf("Of(%T) = %v; want nil", x, got)
		}
	}
}
