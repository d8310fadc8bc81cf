package redis

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// do sends the command that build makes through the client, bounded by
// ctx, and sends it again if it never left the process (see notSent).
func (s *Store) do(ctx context.Context, build func() rueidis.Completed) rueidis.RedisResult {
	r := s.client.Do(ctx, build())
	for range maxResends {
		if !notSent(ctx, r.Error()) {
			break
		}
		r = s.client.Do(ctx, build()) // built again: the client recycled the first
	}
	return r
}

// doQueued is do for the reads of WaitRelease, whose contexts can be as
// short as the lockers' pauses between attempts (a few milliseconds): it
// bounds the command by ctx's cancellation only, not by its deadline.
//
// Given a context with a deadline, a rueidis connection on which no other
// command is waiting sends the command on the caller's goroutine with the
// deadline set on the socket, and closes the connection if the deadline
// passes before the answer: every command of every other caller on that
// connection then fails, and the client redials. Short waits did that
// under load. Given a context that is only canceled, the client queues the
// command for its pipeline and merely stops waiting for the answer. The
// cost: a connection that the command must open first (the client opens
// them when first used) is bounded by the client's dial timeout rather
// than by ctx.
func (s *Store) doQueued(ctx context.Context, build func() rueidis.Completed) rueidis.RedisResult {
	if _, ok := ctx.Deadline(); !ok {
		return s.do(ctx, build)
	}
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	r := s.do(qctx, build)
	if err := ctx.Err(); err != nil && errors.Is(r.Error(), context.Canceled) {
		return rueidis.NewErrorResult(err) // ctx's own error: its deadline
	}
	return r
}

// maxResends bounds how many times a command that never left is sent
// again.
const maxResends = 3

// notSent reports whether err, the outcome of a command sent with ctx,
// says that the command never left the process, so that it can be sent
// again without being sent twice. That is so of an error that is not the
// command's own: a context error while ctx is alive and before its
// deadline, or a dial error. The client reports them for commands it did
// not write:
//   - it opens its connections when first used, bounded by the context of
//     the command that needs one, and hands the failure to every command
//     waiting for the same connection: another caller's context ended
//     during the dial (a dial error) or the handshake (that caller's
//     context error);
//   - a connection that another caller's deadline closed (see doQueued)
//     answers the next command, which it never writes, with that
//     caller's context.DeadlineExceeded before it is replaced.
//
// A command's own deadline can fire on the socket a moment before ctx
// reports it: hence the check of the deadline itself.
func notSent(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return false
	}
	var op *net.OpError
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &op) && op.Op == "dial")
}
