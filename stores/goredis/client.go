package goredis

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lock/internal/redisstore"
)

// client is the store's go-redis glue: it builds the store's commands,
// sends them and reads the replies, and defends the store against the
// client's own retries (see below).
type client struct {
	c             redis.UniversalClient
	cluster       bool // a *redis.ClusterClient
	ctxTimeouts   bool // the client bounds commands by their context's deadline: see run
	readsReplicas bool // the cluster client sends reads to replicas: see node
	flights       *flights
	pipelines     *sync.Pool // of c.c's redis.Pipeliner, empty: see pipeline
}

var _ redisstore.Client = client{}

// How the store keeps go-redis from turning an ambiguous outcome into a
// wrong answer.
//
// go-redis retries a command on its own (Options.MaxRetries, 3 by
// default) after errors that do not prove the command was not run: a read
// timeout, a connection closed or reset after the command was written. A
// retried SET NX whose first attempt took the lock finds the lock taken —
// by its own token — and would be reported as lock.ErrNotAcquired while
// the caller holds the lock; a retried release whose first attempt
// deleted the lock would report lock.ErrNotHeld. The caller owns the
// client, so the store cannot change its options. Two defences, per
// command:
//
//  1. Every command goes out wrapped in sendOnce, whose NoRetry method
//     tells go-redis not to retry it (in its standalone, cluster and
//     pipeline paths; this module requires v9.22.0, which honours it).
//  2. Should the client send a command more than once all the same (a
//     version that ignores NoRetry; a cluster ASK redirect; a future
//     retry path), its first argument after the keys (the token, where
//     there is one) travels as a sentArg, which counts how many times the
//     client wrote the command — not a key, which a cluster client reads
//     to route the command — and the reply says Resent: the shared store then resolves the outcome by token (an
//     acquisition that finds the lock held under its own token took it;
//     a release that finds nothing reports an unknown outcome).

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
// It returns the string's own bytes, not a copy: go-redis only writes
// them to its buffer.
func (a *sentArg) MarshalBinary() ([]byte, error) {
	a.n.Add(1)
	return unsafe.Slice(unsafe.StringData(a.v), len(a.v)), nil
}

// sent is a command on its way, and what counts its sends.
type sent struct {
	cmd   *redis.Cmd
	count *sentArg
}

// build makes cmd a go-redis command.
func build(ctx context.Context, cmd *redisstore.Cmd) sent {
	args := make([]any, 0, 3+int(cmd.NKeys)+int(cmd.NArgs))
	switch {
	case cmd.Script == nil:
		args = append(args, boxed(cmd.Name))
	case cmd.Full:
		args = append(args, "eval", cmd.Script.Src, int(cmd.NKeys))
	default:
		args = append(args, "evalsha", shas[cmd.Script], int(cmd.NKeys))
	}
	for _, k := range cmd.KeyList() {
		args = append(args, k)
	}
	var count *sentArg
	for i, a := range cmd.ArgList() {
		if i == 0 {
			count = &sentArg{v: a}
			args = append(args, count)
			continue
		}
		args = append(args, boxed(a))
	}
	return sent{redis.NewCmd(ctx, args...), count}
}

// boxed returns s as an interface value, without allocating for the
// words the store sends with every command.
func boxed(s string) any {
	for _, w := range words {
		if w == s {
			return w
		}
	}
	return s
}

var words = [...]any{"SET", "NX", "PX", "INCR", "PEXPIRETIME", "GET", "TYPE", "PTTL", "WAIT"}

// shas holds the SHA-1s of the store's scripts as interface values, so
// that sending one does not allocate.
var shas = func() map[*redisstore.Script]any {
	m := make(map[*redisstore.Script]any)
	for _, sc := range redisstore.Scripts() {
		m[sc] = sc.SHA
	}
	return m
}()

// wrapped returns the command as it is to be sent: in sendOnce.
func (x sent) wrapped() redis.Cmder {
	if letClientRetry.Load() {
		return x.cmd
	}
	return sendOnce{x.cmd}
}

// reply reads the answer to x.
func (x sent) reply() redisstore.Reply {
	r := redisstore.Reply{Resent: x.count != nil && x.count.n.Load() > 1}
	switch err := x.cmd.Err(); {
	case errors.Is(err, redis.Nil):
		r.Nil = true
	case err != nil:
		r.Err = err
		var e redis.Error
		if errors.As(err, &e) {
			r.ServerErr = e.Error()
		}
	default:
		switch v := x.cmd.Val().(type) {
		case int64:
			r.Int = v
		case string:
			r.Str = v
		}
	}
	return r
}

// node returns what sends a command on key: the client (own), or, if the
// cluster client sends reads to replicas (which may lag), the client of
// the master of key's slot, which reports a redirect as an error rather
// than following it. (own is not found by comparing the two: a caller's
// own client type need not be comparable.)
func (c client) node(ctx context.Context, key string, exclusive bool) (p processor, own bool, err error) {
	cc, ok := c.c.(masterFinder)
	if !ok || !c.cluster || key == "" || (!c.readsReplicas && !exclusive) {
		return c.c, true, nil
	}
	p, err = cc.MasterForKey(ctx, key)
	return p, false, err
}

// masterFinder is a *redis.ClusterClient, or a type that embeds one.
type masterFinder interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
}

// processor is a client, or the client of one cluster node.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
}

func firstKey(cmd *redisstore.Cmd) string {
	if cmd.NKeys == 0 {
		return ""
	}
	return cmd.Keys[0]
}

// Do implements redisstore.Client.
func (c client) Do(ctx context.Context, cmd redisstore.Cmd) redisstore.Reply {
	x := build(ctx, &cmd)
	node, _, err := c.node(ctx, firstKey(&cmd), false)
	if err != nil {
		return redisstore.Reply{Err: err}
	}
	cmds := []redisstore.Cmd{cmd}
	if c.bounded(ctx) {
		if err := c.after(ctx, cmds, c.flights.before(cmds)); err != nil {
			return redisstore.Reply{Err: err}
		}
		_ = node.Process(ctx, x.wrapped())
		return x.reply()
	}
	if err := c.run(ctx, cmds, false, func() { _ = node.Process(ctx, x.wrapped()) }); err != nil {
		return redisstore.Reply{Err: err} // x is still the client's
	}
	return x.reply()
}

// DoMulti implements redisstore.Client with a pipeline, which go-redis
// sends on one connection of its pool (per node, on a cluster) that no
// other caller uses meanwhile. With exclusive on a cluster, or on a
// cluster client that sends reads to replicas, the pipeline goes to the
// master of its first key's slot (commands of other slots go in pipelines
// of their own, one after another).
func (c client) DoMulti(ctx context.Context, cmds []redisstore.Cmd, out []redisstore.Reply, exclusive bool) {
	for len(cmds) > 0 {
		n := len(cmds)
		if c.cluster && (exclusive || c.readsReplicas) {
			slot := redisstore.Slot(firstKey(&cmds[0]))
			n = 1
			for n < len(cmds) && (cmds[n].NKeys == 0 || redisstore.Slot(firstKey(&cmds[n])) == slot) {
				n++ // a command without keys (WAIT) goes with those before it
			}
		}
		c.pipeline(ctx, cmds[:n], out[:n], exclusive)
		cmds, out = cmds[n:], out[n:]
	}
}

// pipeline sends cmds, of one slot if pinned to a node, in one pipeline.
func (c client) pipeline(ctx context.Context, cmds []redisstore.Cmd, out []redisstore.Reply, exclusive bool) {
	node, own, err := c.node(ctx, firstKey(&cmds[0]), exclusive)
	var short [4]sent // the usual pipeline: on the stack, unless run needs it
	xs := short[:0]
	for i := range cmds {
		xs = append(xs, build(ctx, &cmds[i]))
	}
	switch {
	case err != nil:
	case c.bounded(ctx):
		// The flight is recorded before it waits for those it follows, so
		// that a release sent meanwhile (its caller, answered by its own
		// context, cleaning up) waits for it in turn.
		f, before := c.flights.startAfter(cmds)
		if err = c.after(ctx, cmds, before); err == nil {
			c.exec(ctx, node, own, xs)
		}
		c.flights.end(f)
	default:
		kept := slices.Clone(xs) // send may outlive this call: see run
		err = c.run(ctx, cmds, true, func() { c.exec(ctx, node, own, kept) })
		xs = kept
	}
	for i, x := range xs {
		if err != nil {
			out[i] = redisstore.Reply{Err: err}
			continue
		}
		out[i] = x.reply()
	}
}

// exec sends xs in one pipeline of node, which is c.c if own. A pipeline
// of c.c is kept for the next call once its Exec has returned and emptied
// it — also when run stopped waiting for exec.
func (c client) exec(ctx context.Context, node processor, own bool, xs []sent) {
	var p redis.Pipeliner
	if own {
		p, _ = c.pipelines.Get().(redis.Pipeliner)
	}
	if p == nil {
		p = node.Pipeline()
	}
	for _, x := range xs {
		_ = p.Process(ctx, x.wrapped())
	}
	_, _ = p.Exec(ctx)
	if own {
		c.pipelines.Put(p)
	}
}

// run calls send, which sends cmds (one command, or a pipeline) with ctx,
// and returns nil once it has returned, or ctx's error if ctx ends first.
//
// go-redis bounds a command by its context's deadline only when the
// client was made with ContextTimeoutEnabled (and a ReadTimeout and
// WriteTimeout other than -2, which turn socket deadlines off), and never
// notices a cancellation once the command is written: otherwise it waits
// up to the client's ReadTimeout (5s by default), or forever if there is
// none. So unless the client bounds the command by ctx — ContextTimeoutEnabled
// and a deadline — or ctx cannot end (see bounded: the callers send such
// commands themselves), the commands are sent by run, which calls send in
// a goroutine of its own and stops waiting when ctx ends; the outcome is
// then unknown and the error says so. The goroutine ends when the client
// gives up.
//
// Before it sends, run orders cmds after the commands on their locks
// still on their way (see flights): a pipeline (pipelined) is a flight
// from then on, whoever waits for it; a single command becomes one if
// its caller stops waiting for it.
func (c client) run(ctx context.Context, cmds []redisstore.Cmd, pipelined bool, send func()) error {
	var f *flight
	var before []*flight
	if pipelined {
		f, before = c.flights.startAfter(cmds) // as in pipeline
	} else {
		before = c.flights.before(cmds)
	}
	if err := c.after(ctx, cmds, before); err != nil {
		c.flights.end(f)
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		send()
		c.flights.end(f)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if f != nil {
			f.abandoned.Store(true)
		} else {
			c.flights.follow(cmds, done)
		}
		return ctx.Err()
	}
}

// after waits until before, the commands that cmds must follow, have
// ended: see flights. If ctx ends first it returns ctx's error, cmds
// unsent — but the releases among them are sent all the same, in the
// background, once those commands have ended: a release that cleans up
// after an acquisition whose outcome is unknown must not be lost because
// the acquisition is slow, or the lock it may take is left held until
// its TTL runs out. The caller's outcome is unknown either way.
func (c client) after(ctx context.Context, cmds []redisstore.Cmd, before []*flight) error {
	if len(before) == 0 {
		return nil
	}
	err := awaitAll(ctx, before)
	if err == nil {
		return nil
	}
	var releases []redisstore.Cmd
	for i := range cmds {
		if isRelease(&cmds[i]) {
			releases = append(releases, cmds[i])
		}
	}
	if releases == nil {
		return err
	}
	f := c.flights.start(releases, true)
	bg := context.WithoutCancel(ctx)
	go func() {
		defer c.flights.end(f)
		_ = awaitAll(bg, before)
		for i := range releases {
			c.sendLate(bg, releases[i])
		}
	}()
	return err
}

// sendLate sends cmd, a release whose caller gave up, with its own
// reply ignored: again in full if the server does not know its script.
func (c client) sendLate(ctx context.Context, cmd redisstore.Cmd) {
	node, _, err := c.node(ctx, firstKey(&cmd), false)
	if err != nil {
		return
	}
	x := build(ctx, &cmd)
	_ = node.Process(ctx, x.wrapped())
	if r := x.reply(); strings.HasPrefix(r.ServerErr, "NOSCRIPT") {
		cmd.Full = true
		x = build(ctx, &cmd)
		_ = node.Process(ctx, x.wrapped())
	}
}

// awaitAll waits until every flight of fs has ended, or ctx ends.
func awaitAll(ctx context.Context, fs []*flight) error {
	for _, f := range fs {
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// bounded reports whether the client bounds a command sent with ctx by
// ctx: ctx cannot end, or the client honours its deadline.
func (c client) bounded(ctx context.Context) bool {
	if ctx.Done() == nil {
		return true
	}
	_, ok := ctx.Deadline()
	return ok && c.ctxTimeouts
}

// isRelease reports whether cmd releases a lock or a permit by token.
func isRelease(cmd *redisstore.Cmd) bool {
	return cmd.Script != nil && (cmd.Script == releaseScript || cmd.Script == permitReleaseScript)
}

// The store's release scripts: see isRelease.
var releaseScript, permitReleaseScript = func() (release, permitRelease *redisstore.Script) {
	for _, sc := range redisstore.Scripts() {
		switch sc.Name {
		case "release":
			release = sc
		case "permit_release":
			permitRelease = sc
		}
	}
	if release == nil || permitRelease == nil {
		panic("goredis: the shared store has no release scripts")
	}
	return release, permitRelease
}()

// flights holds, by the locks they touch, the commands of the store still
// on their way, so that a release never overtakes an acquisition it
// cleans up after on another connection of the pool (go-redis sends each
// caller's commands on a connection of their own):
//   - a pipeline is a flight while it is on its way: the store's calls
//     started with Start (and acquisitions under load, which go out that
//     way) are answered by their own contexts while their batch goes on;
//   - a single command is a flight once its caller stopped waiting for it
//     (abandoned: see run).
//
// A release of a lock waits for every flight on the lock; any other
// command only for the abandoned ones. A flight is recorded under every
// key of its commands but the fence counters and the restart guard's
// key, which every lock shares.
type flights struct {
	n  atomic.Int32 // flights recorded: the common case, none, costs one load
	mu sync.Mutex
	m  map[string][]*flight
}

// flight is a command, or a pipeline, on its way.
type flight struct {
	keys      []string
	done      chan struct{} // closed when it has ended
	abandoned atomic.Bool   // its caller stopped waiting for it
}

// lockKeys appends to keys the keys of cmds that a flight is recorded
// under.
func lockKeys(keys []string, cmds []redisstore.Cmd) []string {
	for i := range cmds {
		for _, k := range cmds[i].KeyList() {
			if k == "" || k == redisstore.GuardKey || k == redisstore.FenceKey || strings.HasPrefix(k, redisstore.FenceKey+":") {
				continue
			}
			keys = append(keys, k)
		}
	}
	return keys
}

// start records a flight of cmds.
func (fs *flights) start(cmds []redisstore.Cmd, abandoned bool) *flight {
	f := &flight{keys: lockKeys(nil, cmds), done: make(chan struct{})}
	f.abandoned.Store(abandoned)
	if len(f.keys) == 0 {
		return f
	}
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = make(map[string][]*flight)
	}
	for _, k := range f.keys {
		fs.m[k] = append(fs.m[k], f)
	}
	fs.n.Add(1)
	fs.mu.Unlock()
	return f
}

// end records that f has ended. f may be nil.
func (fs *flights) end(f *flight) {
	if f == nil {
		return
	}
	close(f.done)
	if len(f.keys) == 0 {
		return
	}
	fs.mu.Lock()
	for _, k := range f.keys {
		l := slices.DeleteFunc(fs.m[k], func(g *flight) bool { return g == f })
		if len(l) == 0 {
			delete(fs.m, k)
		} else {
			fs.m[k] = l
		}
	}
	fs.n.Add(-1)
	fs.mu.Unlock()
}

// follow records cmds, abandoned by their caller, as a flight that ends
// when done is closed.
func (fs *flights) follow(cmds []redisstore.Cmd, done <-chan struct{}) {
	f := fs.start(cmds, true)
	go func() {
		<-done
		fs.end(f)
	}()
}

// before returns the flights that cmds must follow: on the keys of a
// release among them every flight, on the others the abandoned ones.
func (fs *flights) before(cmds []redisstore.Cmd) []*flight {
	if fs.n.Load() == 0 {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.beforeLocked(cmds)
}

// startAfter records a flight of cmds, as start does, and returns it with
// the flights it must follow, as before does, in one step: no release can
// slip in between unseen.
func (fs *flights) startAfter(cmds []redisstore.Cmd) (f *flight, before []*flight) {
	f = &flight{keys: lockKeys(nil, cmds), done: make(chan struct{})}
	if len(f.keys) == 0 {
		return f, nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	before = fs.beforeLocked(cmds)
	if fs.m == nil {
		fs.m = make(map[string][]*flight)
	}
	for _, k := range f.keys {
		fs.m[k] = append(fs.m[k], f)
	}
	fs.n.Add(1)
	return f, before
}

// beforeLocked is before, with fs.mu held.
func (fs *flights) beforeLocked(cmds []redisstore.Cmd) []*flight {
	var out []*flight
	var buf [4]string
	for i := range cmds {
		release := isRelease(&cmds[i])
		for _, k := range lockKeys(buf[:0], cmds[i:i+1]) {
			for _, f := range fs.m[k] {
				if (release || f.abandoned.Load()) && !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// MaxBatches implements redisstore.Batcher: a pipeline holds a pooled
// connection until all its answers are in, so calls started while one
// batch is slow go out in another.
func (client) MaxBatches() int { return 4 }

// NilAverse implements redisstore.NilAverse: go-redis handles a nil reply
// as an error, which it examines at some cost (allocations) to decide
// whether to retry, so acquisitions that succeed should not answer nil.
func (client) NilAverse() bool { return true }

// NotSent implements redisstore.Client: a command whose connection could
// not be dialed, or that got no connection from the pool, never left.
func (client) NotSent(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var op *net.OpError
	return errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &op) && op.Op == "dial")
}

// Cluster implements redisstore.Client.
func (c client) Cluster() bool { return c.cluster }

// Subscribe implements redisstore.Client. go-redis gives every
// subscription a connection of its own; when ctx ends, the subscription
// is closed with its connection, which unsubscribes it on the server. A
// cluster client that reads from replicas would subscribe on a replica,
// where releases are heard but a queued acquisition is never granted the
// lock (grant.lua looks for its subscription on the master): the
// subscription goes to the master of the channel's slot, as the store's
// commands do (see node).
func (c client) Subscribe(ctx context.Context, channel string, confirmed func(), message func(payload string)) error {
	var on interface {
		SSubscribe(context.Context, ...string) *redis.PubSub
	} = c.c
	if cc, ok := c.c.(masterFinder); ok && c.readsReplicas {
		master, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return err
		}
		on = master
	}
	ps := on.SSubscribe(context.WithoutCancel(ctx), channel)
	defer context.AfterFunc(ctx, func() { _ = ps.Close() })()
	defer ps.Close()
	for {
		msg, err := ps.Receive(context.WithoutCancel(ctx))
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Channel != channel {
				continue
			}
			switch m.Kind {
			case "ssubscribe":
				confirmed()
			case "sunsubscribe":
				return redisstore.ErrSubscriptionEnded
			}
		case *redis.Message:
			if m.Channel == channel {
				message(m.Payload)
			}
		}
	}
}
