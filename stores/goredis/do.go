package goredis

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock/internal/redisproto"
)

// How the store keeps go-redis from turning an ambiguous outcome into a
// wrong answer.
//
// go-redis retries a command on its own (Options.MaxRetries, 3 by
// default) after errors that do not prove the command was not run: a
// read timeout, a connection closed or reset after the command was
// written. A retried SET NX whose first attempt took the lock finds the
// lock taken — by its own token — and would be reported as
// lock.ErrNotAcquired while the caller holds the lock; a retried release
// whose first attempt deleted the lock would report lock.ErrNotHeld. The
// caller owns the client, so the store cannot change its options. Two
// defences, per command:
//
//  1. Every command goes out wrapped in sendOnce, whose NoRetry method
//     tells go-redis not to retry it (in its standalone, cluster and
//     pipeline paths; this module requires v9.22.0, which honours it): a
//     Store makes one attempt per call, and an error after sending is
//     returned as it is — ambiguous, never a lock outcome.
//  2. Should the client send a command more than once all the same (a
//     version that ignores NoRetry; a cluster ASK redirect; a future
//     retry path), the token travels as a sentArg, which counts how many
//     times the client wrote the command. An acquisition that was sent
//     more than once and finds the lock held under its own token took it
//     on an earlier send: it reports success (with the fence that send
//     got). A release sent more than once that finds nothing to release
//     reports an error saying the outcome is unknown, not lock.ErrNotHeld.
//     (Extend is idempotent: extending twice is extending.)
//
// Case 2 cannot tell a re-sent acquisition from a caller that asks again
// for a lock it already holds under the same token (locks are not
// re-entrant; the lockers' random tokens never do that): with a re-send,
// such a call is reported acquired.

// sendOnce is a command that go-redis must not retry: see above.
type sendOnce struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again after an error.
func (sendOnce) NoRetry() bool { return true }

// letClientRetry is set only by tests that let the client retry, to
// exercise defence 2.
var letClientRetry atomic.Bool

// sentArg is a command argument that counts how many times the client
// wrote its command: go-redis writes an encoding.BinaryMarshaler argument
// by calling MarshalBinary, once per send.
type sentArg struct {
	v string
	n atomic.Int32
}

// MarshalBinary implements encoding.BinaryMarshaler, counting the sends.
func (a *sentArg) MarshalBinary() ([]byte, error) {
	a.n.Add(1)
	return []byte(a.v), nil
}

// resent reports whether the command was written more than once.
func (a *sentArg) resent() bool { return a.n.Load() > 1 }

// do runs the command made of args, once, bounded by ctx (see run).
func (s *Store) do(ctx context.Context, args ...any) *redis.Cmd {
	return s.doOn(ctx, s.client, args...)
}

// read is do for a command that reads key: it goes to the master of the
// key's slot even if the client sends reads to replicas, which may lag.
func (s *Store) read(ctx context.Context, key string, args ...any) *redis.Cmd {
	if !s.readsReplicas {
		return s.doOn(ctx, s.client, args...)
	}
	node, err := s.client.(*redis.ClusterClient).MasterForKey(ctx, key)
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return s.doOn(ctx, node, args...)
}

// processor is a client, or the client of one cluster node.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// doOn runs the command made of args through c, once, bounded by ctx.
func (s *Store) doOn(ctx context.Context, c processor, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if err := s.run(ctx, func() { _ = c.Process(ctx, wrap(cmd)) }); err != nil {
		// cmd is still the client's: answer with another.
		abandoned := redis.NewCmd(ctx)
		abandoned.SetErr(err)
		return abandoned
	}
	return cmd
}

// wrap returns cmd as it is to be sent: in sendOnce.
func wrap(cmd *redis.Cmd) redis.Cmder {
	if letClientRetry.Load() {
		return cmd
	}
	return sendOnce{cmd}
}

// run calls f, which sends commands with ctx, and returns nil once it
// has returned, or ctx's error if ctx ends first.
//
// go-redis bounds a command by its context's deadline only when the
// client was made with ContextTimeoutEnabled, and never notices a
// cancellation once the command is written: otherwise it waits up to the
// client's ReadTimeout (3s by default), or forever if there is none. So
// unless the client bounds the command by ctx — ContextTimeoutEnabled
// and a deadline — or ctx cannot end, run calls f in a goroutine of its
// own and stops waiting when ctx ends; the outcome is then unknown and
// the error says so. The goroutine ends when the client gives up.
func (s *Store) run(ctx context.Context, f func()) error {
	if ctx.Done() == nil {
		f()
		return nil
	}
	if _, ok := ctx.Deadline(); ok && s.ctxTimeouts {
		f()
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// eval runs sc by its SHA-1 and, if the server answers NOSCRIPT, in full.
// An argument may be a sentArg, which then counts the sends of the
// command that ran.
func (s *Store) eval(ctx context.Context, sc *redisproto.Script, keys []string, args ...any) *redis.Cmd {
	a := scriptArgs("evalsha", sc.SHA, sc.NKeys, keys, args)
	cmd := s.do(ctx, a...)
	if isNoScript(cmd.Err()) {
		// NOSCRIPT: the server ran nothing, so the sends so far do not
		// count.
		for _, x := range args {
			if t, ok := x.(*sentArg); ok {
				t.n.Store(0)
			}
		}
		a[0], a[1] = "eval", sc.Src
		cmd = s.do(ctx, a...)
	}
	return cmd
}

// scriptArgs returns the arguments of EVALSHA or EVAL.
func scriptArgs(verb, script string, nkeys int, keys []string, args []any) []any {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, verb, script, nkeys)
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

func isNoScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }

func isWrongType(err error) bool { return redis.HasErrorPrefix(err, "WRONGTYPE") }

// errUnknownOutcome reports a command that the client sent more than once
// and whose outcome the last answer cannot tell.
var errUnknownOutcome = errors.New("goredis: the client sent the command more than once (it retried after an error), and the last answer cannot tell what the first did")
