package ctxend_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/ctxend"
)

// passed is a context whose deadline has passed while it does not report
// it yet, as a context is between its deadline and its timer's firing.
type passed struct{ context.Context }

func (passed) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (passed) Err() error                  { return nil }

func TestErr(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	live, stop := context.WithTimeout(context.Background(), time.Hour)
	defer stop()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"background", context.Background(), nil},
		{"live deadline", live, nil},
		{"canceled", canceled, context.Canceled},
		{"deadline passed, not reported", passed{context.Background()}, context.DeadlineExceeded},
	} {
		if got := ctxend.Err(c.ctx); !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("%s: Err(ctx) = %v; want %v", c.name, got, c.want)
		}
	}
}
