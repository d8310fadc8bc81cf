package redisstore

import (
	"context"
	"strings"
)

// Client is what the store needs of a Redis client: the adapters in
// stores/redis (rueidis) and stores/goredis (go-redis) implement it, and
// everything else is written once, here.
//
// Every method must be safe for concurrent use, make one attempt (the
// client must not retry a command on its own: a retried acquisition
// finds its own lock), and report an outcome it cannot be sure of as an
// error in Reply.Err, never as a reply.
type Client interface {
	// Do sends one command and returns its reply, bounded by ctx.
	Do(ctx context.Context, cmd Cmd) Reply

	// DoMulti sends cmds in one round trip, in order, on one connection
	// to the node serving their keys (the store only puts commands on one
	// slot together when their order matters), and writes their replies
	// to replies (as long as cmds), bounded by ctx. With exclusive, no
	// other caller's command may share the connection meanwhile and a
	// cluster redirect is an error rather than followed: WAIT counts the
	// writes of its connection.
	DoMulti(ctx context.Context, cmds []Cmd, replies []Reply, exclusive bool)

	// Subscribe subscribes to a shard channel (SSUBSCRIBE) and runs the
	// subscription until ctx ends or it breaks: it calls confirmed for
	// every confirmation of the subscription (the client may subscribe
	// again after a reconnection) and message with every message's
	// payload, on one goroutine, in the order the server sent them;
	// neither may block. It returns nil once ctx has ended and it has
	// unsubscribed on the server (or given up trying),
	// ErrSubscriptionEnded if the server ended the subscription, and the
	// connection's error if it broke — at once, without waiting for the
	// client to subscribe again.
	Subscribe(ctx context.Context, channel string, confirmed func(), message func(payload string)) error

	// NotSent reports whether err, the outcome of a command sent with
	// ctx, says that the command never left the process, so that it can
	// be sent again without running twice.
	NotSent(ctx context.Context, err error) bool

	// Cluster reports whether the client talks to a Redis Cluster.
	Cluster() bool
}

// Cmd is one command. Name, Keys and Args are the command as it goes on
// the wire; a script is run with Script instead of Name (EVALSHA, or
// EVAL with its source when Full). Keys and Args are arrays so that a
// command costs no allocation of its own.
type Cmd struct {
	Name   string
	Script *Script
	Full   bool
	// Queue asks the client to bound the command by ctx's cancellation
	// rather than by its deadline where that matters to it (see the
	// rueidis adapter): for the short waits of WaitRelease.
	Queue bool
	NKeys uint8
	NArgs uint8
	Keys  [3]string
	Args  [5]string
}

// KeyList returns the command's keys.
func (c *Cmd) KeyList() []string { return c.Keys[:c.NKeys] }

// ArgList returns the command's arguments.
func (c *Cmd) ArgList() []string { return c.Args[:c.NArgs] }

// command returns the command name with keys and arguments.
func command(name string, keys []string, args ...string) Cmd {
	c := Cmd{Name: name, NKeys: uint8(len(keys)), NArgs: uint8(len(args))}
	copy(c.Keys[:], keys)
	copy(c.Args[:], args)
	return c
}

// cmd1 returns a command on one key.
func cmd1(name, key string, args ...string) Cmd {
	c := Cmd{Name: name, NKeys: 1, NArgs: uint8(len(args))}
	c.Keys[0] = key
	copy(c.Args[:], args)
	return c
}

// script returns the command that runs sc with keys and args.
func script(sc *Script, keys []string, args ...string) Cmd {
	c := command("", keys, args...)
	c.Script = sc
	return c
}

// Reply is the answer to a command.
type Reply struct {
	Int int64  // an integer reply
	Str string // a string reply
	Nil bool   // a nil reply
	// Err is set if there was no reply: the command failed or its
	// outcome is unknown. A server's error reply is an Err too, with
	// ServerErr set to its text ("WRONGTYPE ...").
	Err       error
	ServerErr string
	// Resent reports that the client wrote the command more than once
	// (a retry the store could not prevent): see the go-redis adapter.
	Resent bool
}

// serverErr reports whether r is the server's error reply beginning with
// prefix.
func (r *Reply) serverErr(prefix string) bool { return strings.HasPrefix(r.ServerErr, prefix) }

func (r *Reply) noScript() bool { return r.serverErr("NOSCRIPT") }

func (r *Reply) unknownCommand() bool { return r.serverErr("ERR unknown command") }
