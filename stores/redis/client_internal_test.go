package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/internal/testing/faultproxy"
	"github.com/lockkit/lock/internal/testing/redistest"
)

// TestDoMultiAbandonedCommands: a DoMulti whose context ends while the
// client is still writing its commands leaves the client the slice it
// handed them in, so the next DoMulti must not reuse it. The first
// DoMulti's commands wait behind a large value the proxy holds; once it
// has given up, a second DoMulti goes out. Reusing the slice would have
// the client write the second DoMulti's commands in place of the rest of
// the first's: INCR b twice, SET a never.
func TestDoMultiAbandonedCommands(t *testing.T) {
	srv := redistest.Start(t)
	p, err := faultproxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := client{c: srv.NewClient(t, func(o *rueidis.ClientOption) { o.InitAddress = []string{p.Addr()} })}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := c.Do(ctx, redisstore.Cmd{Name: "PING"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	big := strings.Repeat("x", 32<<20) // more than the sockets between client and proxy take
	// sync.Pool may drop what it is given (always under -race, at random):
	// several rounds make the second DoMulti find the first's slice.
	const rounds = 6
	for i := range rounds {
		p.Set(faultproxy.ToServer, faultproxy.Hold())
		abandoned := []redisstore.Cmd{
			cmd("SET", "big", big),
			cmd("SET", "a", "from the first DoMulti"),
			cmd("INCR", "a:n"),
		}
		// A cancellation, not a deadline: the client queues the commands
		// for its writer instead of writing them on this goroutine.
		actx, stop := context.WithCancel(context.Background())
		timer := time.AfterFunc(300*time.Millisecond, stop)
		replies := make([]redisstore.Reply, len(abandoned))
		c.DoMulti(actx, abandoned, replies, false)
		timer.Stop()
		stop()
		if replies[2].Err == nil {
			t.Fatalf("round %d: the held DoMulti answered %+v; want its context's error", i, replies[2])
		}
		second := []redisstore.Cmd{cmd("INCR", "b:n"), cmd("INCR", "b:n")}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.DoMulti(ctx, second, make([]redisstore.Reply, len(second)), false)
		}()
		p.Set(faultproxy.ToServer, faultproxy.Pass())
		<-done
		if got, err := srv.Do("GET", "b:n").AsInt64(); err != nil || got != int64(2*(i+1)) {
			t.Fatalf("round %d: b:n = %d, %v after the second DoMulti; want %d: its commands were written more than once", i, got, err, 2*(i+1))
		}
		// The first DoMulti's commands follow the value; the server has
		// run them by the time it answers this command on the same
		// connection.
		if r := c.Do(ctx, cmd("GET", "a")); r.Str != "from the first DoMulti" {
			t.Fatalf("round %d: GET a = %+v; want the first DoMulti's value", i, r)
		}
		if got, err := srv.Do("GET", "a:n").AsInt64(); err != nil || got != int64(i+1) {
			t.Fatalf("round %d: a:n = %d, %v; want %d", i, got, err, i+1)
		}
	}
}

func cmd(name, key string, args ...string) redisstore.Cmd {
	c := redisstore.Cmd{Name: name, NKeys: 1, NArgs: uint8(len(args))}
	c.Keys[0] = key
	copy(c.Args[:], args)
	return c
}
