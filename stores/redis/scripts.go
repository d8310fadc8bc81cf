package redis

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock/internal/redisproto"
)

// The scripts, shared with the go-redis store: see package redisproto
// for what each does. script is one of them.
type script = redisproto.Script

var (
	acquireScript      = redisproto.Acquire
	releaseScript      = redisproto.Release
	waitScript         = redisproto.Wait
	passScript         = redisproto.Pass
	leaveScript        = redisproto.Leave
	extendScript       = redisproto.Extend
	guardedScript      = redisproto.Guarded
	forceReleaseScript = redisproto.ForceRelease
)

// scriptCmd builds the command that runs sc: EVALSHA, or EVAL when full.
func scriptCmd(b rueidis.Builder, sc *script, full bool, keys *[2]string, args *[3]string) rueidis.Completed {
	numkeys := int64(sc.NKeys)
	if full {
		return b.Eval().Script(sc.Src).Numkeys(numkeys).Key(keys[:sc.NKeys]...).Arg(args[:sc.NArgs]...).Build()
	}
	return b.Evalsha().Sha1(sc.SHA).Numkeys(numkeys).Key(keys[:sc.NKeys]...).Arg(args[:sc.NArgs]...).Build()
}

// eval runs sc with up to two keys and three arguments (unused ones are
// ignored, as the script says how many it takes).
func (s *Store) eval(ctx context.Context, sc *script, k1, k2, a1, a2, a3 string) rueidis.RedisResult {
	keys, args := [2]string{k1, k2}, [3]string{a1, a2, a3}
	full := false
	build := func() rueidis.Completed { return scriptCmd(s.client.B(), sc, full, &keys, &args) }
	r := s.do(ctx, build)
	if isNoScript(r.Error()) {
		full = true
		r = s.do(ctx, build)
	}
	return r
}

func isNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ttlArg is a TTL in milliseconds as a script argument.
type ttlArg struct {
	ttl time.Duration
	arg string
}

// ttlArg returns ttl in whole milliseconds as a string, remembering the
// last one: callers mostly use one TTL, so this saves an allocation per
// call.
func (s *Store) ttlArg(ttl time.Duration) string {
	if last := s.lastTTL.Load(); last != nil && last.ttl == ttl {
		return last.arg
	}
	a := &ttlArg{ttl: ttl, arg: itoa(millis(ttl))}
	s.lastTTL.Store(a)
	return a.arg
}
