package redis

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/ctxend"
	"github.com/lockkit/lock/internal/redisstore"
)

// client is the store's rueidis glue: it builds the store's commands,
// sends them and reads the replies.
type client struct {
	c       rueidis.Client
	cluster bool
	// subs is where, on a cluster, the client sends SSUBSCRIBE (see
	// Subscribe): subsUnknown until a subscription has found out.
	subs *atomic.Int32
}

// Where a cluster client sends SSUBSCRIBE.
const (
	subsUnknown   = iota
	subsOnMaster  // to the slot's master, as the store needs
	subsOnReplica // to a replica (SendToReplicas): subscribe through a dedicated connection
)

var _ redisstore.Client = client{}

// build builds cmd. Commands are built as plain commands, not as the
// client's read-only ones, so that the client neither retries one (a
// store makes one attempt per call) nor sends one to a replica, which may
// lag.
//
// On a single server (or a Sentinel-managed master) the keys are sent
// without their slot: rueidis then sends every command of the store on
// the same one of its pipelined connections, in the order they were
// made. Given a slot, it would pick one of its connections at random for
// each command (four by default), and the release that cleans up after
// an acquisition whose caller gave up could reach the server before the
// acquisition, leaving the lock held until its TTL. On a cluster the slot
// picks the node, and the client has one connection per node unless
// ClientOption.PipelineMultiplex says otherwise.
func (c client) build(cmd *redisstore.Cmd) rueidis.Completed {
	head := [3]string{cmd.Name}
	n := 1
	if cmd.Script != nil {
		head, n = [3]string{"EVALSHA", cmd.Script.SHA, strconv.Itoa(int(cmd.NKeys))}, 3
		if cmd.Full {
			head[0], head[1] = "EVAL", cmd.Script.Src
		}
	}
	if c.cluster {
		return c.c.B().Arbitrary(head[:n]...).Keys(cmd.KeyList()...).Args(cmd.ArgList()...).Build()
	}
	return c.c.B().Arbitrary(head[:n]...).Args(cmd.KeyList()...).Args(cmd.ArgList()...).Build()
}

// reply converts a rueidis result.
func reply(r rueidis.RedisResult) redisstore.Reply {
	m, err := r.ToMessage()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return redisstore.Reply{Nil: true}
		}
		out := redisstore.Reply{Err: err}
		if e, ok := rueidis.IsRedisErr(err); ok {
			out.ServerErr = e.Error()
		}
		return out
	}
	if m.IsInt64() {
		n, _ := m.AsInt64()
		return redisstore.Reply{Int: n}
	}
	s, _ := m.ToString()
	return redisstore.Reply{Str: s}
}

// Do implements redisstore.Client.
func (c client) Do(ctx context.Context, cmd redisstore.Cmd) redisstore.Reply {
	if cmd.Queue {
		return c.doQueued(ctx, &cmd)
	}
	return reply(c.c.Do(ctx, c.build(&cmd)))
}

// doQueued is Do for the reads of WaitRelease, whose contexts can be as
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
func (c client) doQueued(ctx context.Context, cmd *redisstore.Cmd) redisstore.Reply {
	if _, ok := ctx.Deadline(); !ok {
		return reply(c.c.Do(ctx, c.build(cmd)))
	}
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	r := reply(c.c.Do(qctx, c.build(cmd)))
	if err := ctx.Err(); err != nil && errors.Is(r.Err, context.Canceled) {
		return redisstore.Reply{Err: err} // ctx's own error: its deadline
	}
	return r
}

// DoMulti implements redisstore.Client: one DoMulti, which rueidis writes
// to one connection in one go; with exclusive, on a dedicated connection,
// which reports a cluster redirect as an error rather than following it.
func (c client) DoMulti(ctx context.Context, cmds []redisstore.Cmd, replies []redisstore.Reply, exclusive bool) {
	b := builts.Get().(*built)
	list := b.cmds[:0]
	for i := range cmds {
		list = append(list, c.build(&cmds[i]))
	}
	var results []rueidis.RedisResult
	if exclusive {
		var err error
		if results, err = c.dedicated(ctx, list); err != nil {
			for i := range replies {
				replies[i] = redisstore.Reply{Err: err}
			}
			return // b is dropped: the client may hold list
		}
	} else {
		results = c.c.DoMulti(ctx, list...)
	}
	answered := true
	for i, r := range results {
		replies[i] = reply(r)
		answered = answered && r.NonRedisError() == nil
	}
	if answered {
		b.put(list)
	}
}

// built is the slice DoMulti hands the client its commands in, pooled.
// The client keeps the slice until it has written the commands: when ctx
// ends first, it returns an error for each command and writes them
// later. So a slice goes back to the pool only once every command has the
// server's answer, the rule by which the client itself recycles its
// commands (those with another outcome it keeps and drops).
type built struct{ cmds []rueidis.Completed }

var builts = sync.Pool{New: func() any { return new(built) }}

// put returns b to the pool with list, the slice it handed out, emptied.
func (b *built) put(list []rueidis.Completed) {
	clear(list) // the commands: the client recycles them
	b.cmds = list[:0]
	builts.Put(b)
}

// dedicated sends cmds on a dedicated connection.
func (c client) dedicated(ctx context.Context, cmds []rueidis.Completed) (results []rueidis.RedisResult, err error) {
	err = c.c.Dedicated(func(d rueidis.DedicatedClient) error {
		results = d.DoMulti(ctx, cmds...)
		return nil
	})
	return results, err
}

// NotSent implements redisstore.Client. A command never left the process
// if its error is not its own: a context error while ctx is alive and
// before its deadline, or a dial error. The client reports them for
// commands it did not write:
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
func (client) NotSent(ctx context.Context, err error) bool {
	if err == nil || ctxend.Err(ctx) != nil {
		return false
	}
	var op *net.OpError
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &op) && op.Op == "dial")
}

// Cluster implements redisstore.Client.
func (c client) Cluster() bool { return c.cluster }

// unsubscribeTimeout bounds the SUNSUBSCRIBE sent when a subscription is
// dropped; it delays no caller, only the end of the subscription.
const unsubscribeTimeout = 2 * time.Second

// Subscribe implements redisstore.Client with Receive. If the connection
// breaks, or the server refuses the subscription, it returns at once
// instead of letting the client subscribe again in the background; when
// ctx ends, it unsubscribes on the connection of the subscription — also
// if the confirmation had not arrived yet, as the SSUBSCRIBE may still be
// applied.
//
// On a cluster the subscription must be on the master of the channel's
// slot: a release grants the lock to a queued acquisition only if its
// subscription listens there (see grant.lua). rueidis counts SSUBSCRIBE
// among the read-only commands, which a client made with SendToReplicas
// may send to a replica, where it hears releases but is passed over by
// them. So the first subscriptions of a cluster client count the
// channel's subscribers on the master once confirmed (PUBSUB
// SHARDNUMSUB, which the client sends to the master); one that finds
// itself elsewhere ends, and from then on every subscription goes through
// a dedicated connection, which the client opens to the slot's master.
func (c client) Subscribe(ctx context.Context, channel string, confirmed func(), message func(payload string)) error {
	if !c.cluster || c.subs == nil {
		return c.receive(ctx, c.c, channel, confirmed, message, false)
	}
	switch c.subs.Load() {
	case subsOnMaster:
		return c.receive(ctx, c.c, channel, confirmed, message, false)
	case subsOnReplica:
		return c.onMaster(ctx, channel, confirmed, message)
	}
	err := c.receive(ctx, c.c, channel, confirmed, message, true)
	if err == errOnReplica {
		c.subs.Store(subsOnReplica)
		return c.onMaster(ctx, channel, confirmed, message)
	}
	return err
}

// errOnReplica reports a subscription that is not on its slot's master.
var errOnReplica = errors.New("the subscription is not on its slot's master")

// onMaster subscribes through a dedicated connection, which a cluster
// client opens to the master of the channel's slot.
func (c client) onMaster(ctx context.Context, channel string, confirmed func(), message func(payload string)) error {
	var err error
	_ = c.c.Dedicated(func(d rueidis.DedicatedClient) error {
		err = c.receive(ctx, d, channel, confirmed, message, false)
		return nil
	})
	return err
}

// receiver is what receive subscribes through: the client, or a
// dedicated connection of it.
type receiver interface {
	B() rueidis.Builder
	Receive(ctx context.Context, subscribe rueidis.Completed, fn func(msg rueidis.PubSubMessage)) error
}

// onSlotMaster reports whether channel has a subscriber on the master of
// its slot, where a cluster client sends PUBSUB, a command it does not
// count as read-only.
func (c client) onSlotMaster(ctx context.Context, channel string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, unsubscribeTimeout)
	defer cancel()
	counts, err := c.c.Do(ctx, c.c.B().Arbitrary("PUBSUB", "SHARDNUMSUB").Keys(channel).Build()).ToArray()
	if err != nil {
		return false, err
	}
	if len(counts) != 2 {
		return false, errors.New("PUBSUB SHARDNUMSUB: not a channel and its count")
	}
	n, err := counts[1].AsInt64()
	return n > 0, err
}

// receive runs the subscription to channel through rc; with check, it
// tells the caller of the first confirmation only once the subscription
// is found on its slot's master, and returns errOnReplica, unsubscribed,
// if it is not.
func (c client) receive(ctx context.Context, rc receiver, channel string, confirmed func(), message func(payload string), check bool) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var broken error
	var checked, misplaced atomic.Bool
	rctx = rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if s.Kind != "ssubscribe" || s.Channel != channel {
			return
		}
		if !check || checked.Swap(true) {
			confirmed()
			return
		}
		// The hook runs on the connection's reader, which must not wait
		// for a command.
		go func() {
			switch onMaster, err := c.onSlotMaster(rctx, channel); {
			case err == nil && !onMaster:
				misplaced.Store(true)
				cancel()
			case err == nil:
				c.subs.CompareAndSwap(subsUnknown, subsOnMaster)
				confirmed()
			case rctx.Err() == nil:
				confirmed() // not told: the store finds out when it looks again
			}
		}()
	})
	rctx = rueidis.WithOnReceiveReturnHook(rctx, func(err error, cc rueidis.CommandClient) error {
		if err != nil && ctx.Err() == nil && !misplaced.Load() {
			mu.Lock()
			broken = err
			mu.Unlock()
			cancel()
			return err
		}
		uctx, done := context.WithTimeout(context.Background(), unsubscribeTimeout)
		_ = cc.Do(uctx, cc.B().Sunsubscribe().Channel(channel).Build())
		done()
		return err
	})
	err := rc.Receive(rctx, rc.B().Ssubscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) { message(m.Message) })
	mu.Lock()
	defer mu.Unlock()
	switch {
	case broken != nil:
		return broken
	case ctx.Err() != nil:
		return nil
	case misplaced.Load():
		return errOnReplica
	case err == nil:
		return redisstore.ErrSubscriptionEnded
	}
	return err
}
