package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lock/internal/testing/etcdtest"
)

// A call that the caller's deadline ends returns an error matching
// context.DeadlineExceeded, whatever words etcd answers with: the deadline
// the client passes on to the server ends the request there, and etcd
// says so as "context deadline exceeded" with code Unknown, or as
// "request timed out", which clientv3.ContextError does not convert.
func TestDeadlineErrorsMatchWhateverEtcdSays(t *testing.T) {
	for name, answer := range map[string]error{
		"code Unknown":      status.Error(codes.Unknown, context.DeadlineExceeded.Error()),
		"request timed out": rpctypes.ErrGRPCTimeout,
	} {
		t.Run(name, func(t *testing.T) {
			var late atomic.Bool // the server answers when the caller's deadline passes
			c := interceptedClient(t, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if late.Load() {
					<-ctx.Done()
					return answer
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			}, etcdtest.Shared(t).Endpoints()...)
			s := newStore(t, c)
			late.Store(true)
			calls := map[string]func(ctx context.Context) error{
				"Exists":  func(ctx context.Context) error { _, err := s.Exists(ctx, "r"); return err },
				"Acquire": func(ctx context.Context) error { return s.Acquire(ctx, "r", "tok", time.Minute) },
				"Holder":  func(ctx context.Context) error { _, _, err := s.Holder(ctx, "r"); return err },
			}
			for call, f := range calls {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
				err := f(ctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s, ended by the caller's deadline, etcd answering %q = %v; want an error matching context.DeadlineExceeded", call, answer, err)
				}
			}
			late.Store(false)
		})
	}
}
