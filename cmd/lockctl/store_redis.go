package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/redisstore"
	"github.com/lockkit/lock/stores/redis"
)

// Redis URLs:
//
//	redis://[user:pass@]host[:port][/db][?params]                 one server
//	redis+cluster://[user:pass@]host[:port][,host[:port]...][?params]  a Redis Cluster (seed nodes)
//	redis+sentinel://[user:pass@]host[:port][,...]/master[/db][?params] a master found through Sentinels
//
// rediss, rediss+cluster and rediss+sentinel are the same over TLS.

type redisMode int

const (
	redisSingle redisMode = iota
	redisCluster
	redisSentinel
	redisUnix // one server on a unix socket
)

var redisParams = []string{"prefix", "name", "dial_timeout", "client_name", "wait_replicas", "wait_timeout"}
var tlsParams = []string{"ca", "cert", "key", "server_name", "insecure"}
var sentinelParams = []string{"sentinel_user", "sentinel_password"}

func init() {
	for _, name := range []string{"redis", "valkey"} {
		for _, tls := range []bool{false, true} {
			s := name
			if tls {
				s += "s"
			}
			schemes[s] = func(u *storeURL) (*storeSpec, error) { return parseRedis(u, redisSingle, tls) }
			schemes[s+"+cluster"] = func(u *storeURL) (*storeSpec, error) { return parseRedis(u, redisCluster, tls) }
			schemes[s+"+sentinel"] = func(u *storeURL) (*storeSpec, error) { return parseRedis(u, redisSentinel, tls) }
		}
	}
	schemes["unix"] = func(u *storeURL) (*storeSpec, error) { return parseRedis(u, redisUnix, false) }
}

func parseRedis(u *storeURL, mode redisMode, useTLS bool) (*storeSpec, error) {
	if err := rueidisForms(u, mode, useTLS); err != nil {
		return nil, err
	}
	known := append(append([]string{}, redisParams...), rueidisParams...)
	if useTLS {
		known = append(known, tlsParams...)
	}
	if mode == redisSentinel {
		known = append(known, sentinelParams...)
	}
	if err := u.checkParams(known...); err != nil {
		if !useTLS {
			for _, p := range tlsParams {
				if _, ok := u.param(p); ok {
					return nil, u.bad("query parameter "+p, "TLS settings need a TLS scheme: %s://", tlsScheme(u.scheme))
				}
			}
		}
		return nil, err
	}
	opt := rueidis.ClientOption{
		Username:     u.user,
		Password:     u.password,
		ClientName:   "lockctl",
		DisableCache: true, // the store reads nothing through the client-side cache
	}
	var err error
	switch mode {
	case redisSingle:
		opt.ForceSingleClient = true
		opt.InitAddress, err = u.addrs(6379, 1, 1, "one redis:// URL is one server; for a Redis Cluster use redis+cluster://host1,host2; for a Redlock over independent servers repeat --store")
		if err == nil {
			opt.SelectDB, err = redisDB(u, u.path)
		}
	case redisCluster:
		opt.InitAddress, err = u.addrs(6379, 1, 0, "")
		if err == nil && u.path != "" && u.path != "0" {
			err = u.bad("database", "%q: a Redis Cluster has only database 0", u.path)
		}
	case redisSentinel:
		opt.InitAddress, err = u.addrs(26379, 1, 0, "")
		if err != nil {
			break
		}
		master, db, _ := strings.Cut(u.path, "/")
		if master == "" {
			err = u.bad("master name", "missing: want %s://SENTINEL:26379/MASTERNAME[/DB]", u.scheme)
			break
		}
		opt.Sentinel.MasterSet = master
		opt.Sentinel.Username, _ = u.param("sentinel_user")
		opt.Sentinel.Password, _ = u.param("sentinel_password")
		opt.Sentinel.ClientName = "lockctl"
		opt.SelectDB, err = redisDB(u, db)
	case redisUnix:
		err = unixSocket(u, &opt)
	}
	if err == nil && mode != redisCluster {
		if db, ok := u.param("db"); ok {
			opt.SelectDB, err = redisDB(u, db)
		}
	}
	if err != nil {
		return nil, err
	}
	if opt.ConnWriteTimeout, err = u.durationParam("write_timeout", 0); err != nil {
		return nil, err
	}
	_, opt.DisableRetry = u.param("max_retries") // max_retries=0: see rueidisForms
	dial, err := u.durationParam("dial_timeout", 5*time.Second)
	if err != nil {
		return nil, err
	}
	opt.Dialer.Timeout, opt.Sentinel.Dialer.Timeout = dial, dial
	if name, ok := u.param("client_name"); ok {
		opt.ClientName = name
	}
	if useTLS {
		if opt.TLSConfig, err = tlsConfig(u); err != nil {
			return nil, err
		}
		opt.Sentinel.TLSConfig = opt.TLSConfig
	}

	var sopts []redis.Option
	if prefix, ok := u.param("prefix"); ok {
		sopts = append(sopts, redis.WithPrefix(prefix))
	}
	name := u.name()
	sopts = append(sopts, redis.WithName(name))
	if n, err := u.intParam("wait_replicas", 0); err != nil {
		return nil, err
	} else if n > 0 {
		wt, err := u.durationParam("wait_timeout", 100*time.Millisecond)
		if err != nil {
			return nil, err
		}
		sopts = append(sopts, redis.WithWaitReplicas(n, wt))
	} else if _, ok := u.param("wait_timeout"); ok {
		return nil, u.bad("query parameter wait_timeout", "only applies with wait_replicas")
	}
	if prefix, ok := u.param("prefix"); ok && strings.ContainsAny(prefix, "{}") {
		// redis.New says so too, but only once connected.
		return nil, u.bad("query parameter prefix", "%q: a Redis key prefix may not hold { or } (the store adds its own hash tag)", prefix)
	}

	prefix, ok := u.param("prefix")
	if !ok {
		prefix = redis.DefaultPrefix
	}
	spec := &storeSpec{display: u.display, name: name, kind: "redis", fences: true, raises: true}
	spec.record = storeRecord{Kind: "redis", Servers: opt.InitAddress, DB: opt.SelectDB, Prefix: prefix}
	switch mode {
	case redisSentinel:
		// The Sentinels of one master; those of another master may be
		// the same processes.
		spec.servers = serverIDs("sentinel", opt.InitAddress...)
		for i := range spec.servers {
			spec.servers[i] += "/" + opt.Sentinel.MasterSet
		}
		spec.record.Kind, spec.record.Master = "redis+sentinel", opt.Sentinel.MasterSet
	case redisUnix:
		spec.servers = []string{"redis " + filepath.Clean(opt.InitAddress[0])}
		spec.record.Kind, spec.record.Servers = "unix", []string{filepath.Clean(opt.InitAddress[0])}
	case redisCluster:
		spec.servers = serverIDs("redis", opt.InitAddress...)
		spec.record.Kind = "redis+cluster"
	default:
		spec.servers = serverIDs("redis", opt.InitAddress...)
	}
	spec.open = func(ctx context.Context) (*openStore, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		opt := opt
		opt.Dialer.Timeout = dialBound(ctx, opt.Dialer.Timeout)
		opt.Sentinel.Dialer.Timeout = dialBound(ctx, opt.Sentinel.Dialer.Timeout)
		client, err := rueidis.NewClient(opt)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", strings.Join(opt.InitAddress, ","), err)
		}
		s, err := redis.New(client, sopts...)
		if err != nil {
			client.Close()
			return nil, &usageError{err: fmt.Errorf("store %s: %w", name, err)}
		}
		o := &openStore{
			Store:         s,
			close:         client.Close,
			forceRelease:  s.ForceRelease,
			lastFence:     s.LastFence,
			permitHolders: redisPermitHolders(client, prefix),
			permitLimit:   redisPermitLimit(client, prefix),
		}
		if mode == redisCluster {
			o.members = func(context.Context) ([]string, error) {
				return slices.Sorted(maps.Keys(client.Nodes())), nil
			}
		}
		return o, nil
	}
	return spec, nil
}

// redisPermitHolders returns a reader of the holders of a resource's
// permits: the public part (lock.HolderOf) of the token of each unexpired
// permit in its sorted set, whose layout package redis documents (members
// the tokens scored by their expiry in server time, ms; "" scored by minus
// the limit). No secret leaves this function.
func redisPermitHolders(client rueidis.Client, prefix string) func(ctx context.Context, resource string) ([]string, error) {
	return func(ctx context.Context, resource string) ([]string, error) {
		t, err := client.Do(ctx, client.B().Time().Build()).AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("reading the server's clock: %w", err)
		}
		var sec, usec int64
		if len(t) == 2 {
			sec, err = strconv.ParseInt(t[0], 10, 64)
			if err == nil {
				usec, err = strconv.ParseInt(t[1], 10, 64)
			}
		}
		if len(t) != 2 || err != nil {
			return nil, fmt.Errorf("reading the server's clock: TIME answered %q", t)
		}
		now := strconv.FormatInt(sec*1000+usec/1000, 10)
		key := redisstore.PermitsKey(prefix, resource)
		tokens, err := client.Do(ctx, client.B().Zrangebyscore().Key(key).Min(now).Max("+inf").Build()).AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("reading the permits' holders: %w", err)
		}
		holders := make([]string, 0, len(tokens))
		for _, token := range tokens {
			if token != "" {
				holders = append(holders, lock.HolderOf(token))
			}
		}
		return holders, nil
	}
}

// redisPermitLimit returns a reader of the limit that a resource's
// permits were taken with: minus the score of the member "" of the
// permits' sorted set (see redisPermitHolders) or, for a semaphore of
// plain locks, the limit in the token of its limit marker, a lock on
// RESOURCE~limit (see lock.NewSemaphore). It is 0 if there is none.
func redisPermitLimit(client rueidis.Client, prefix string) func(ctx context.Context, resource string, native bool) (int, error) {
	return func(ctx context.Context, resource string, native bool) (int, error) {
		if native {
			score, err := client.Do(ctx, client.B().Zscore().Key(redisstore.PermitsKey(prefix, resource)).Member("").Build()).AsFloat64()
			switch {
			case rueidis.IsRedisNil(err):
				return 0, nil
			case err != nil:
				return 0, fmt.Errorf("reading the permits' limit: %w", err)
			}
			return int(-score), nil
		}
		token, err := client.Do(ctx, client.B().Get().Key(redisstore.LockKey(prefix, resource+markerSuffix)).Build()).ToString()
		switch {
		case rueidis.IsRedisNil(err):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("reading the permits' limit marker: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(token, markerPrefix))
		if !strings.HasPrefix(token, markerPrefix) || err != nil || n < 1 {
			return 0, fmt.Errorf("reading the permits' limit marker: %s%s is not a semaphore's marker", resource, markerSuffix)
		}
		return n, nil
	}
}

// redisDB parses a database number.
func redisDB(u *storeURL, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		example := u.scheme + "://host:6379/0"
		switch {
		case u.scheme == "unix":
			example = "unix:///path/to/redis.sock?db=0"
		case strings.HasSuffix(u.scheme, "+sentinel"):
			example = u.scheme + "://host:26379/MASTER/0"
		}
		return 0, u.bad("database", "%q: want a database number such as 0 (%s)", s, example)
	}
	return n, nil
}

// tlsConfig builds the TLS settings of a rediss URL: ca (PEM file of the
// authorities to trust instead of the system's), cert and key (PEM files
// of a client certificate), server_name (the name to verify; by default
// the host of each connection: the server, every cluster node, the
// Sentinels and the master they name), insecure (skip verification).
func tlsConfig(u *storeURL) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if name, ok := u.param("server_name"); ok {
		c.ServerName = name
	}
	if path, ok := u.param("ca"); ok {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, u.bad("query parameter ca", "%v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, u.bad("query parameter ca", "%s holds no PEM certificate", path)
		}
	}
	certPath, hasCert := u.param("cert")
	keyPath, hasKey := u.param("key")
	switch {
	case hasCert != hasKey:
		return nil, u.bad("query parameters cert and key", "give both or neither")
	case hasCert:
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, u.bad("query parameters cert and key", "%v", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	insecure, err := u.boolParam("insecure")
	if err != nil {
		return nil, err
	}
	c.InsecureSkipVerify = insecure
	return c, nil
}
