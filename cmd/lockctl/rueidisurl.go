package main

import (
	"context"
	"crypto/tls"
	"net"
	"strings"

	"github.com/redis/rueidis"
)

// The URL forms rueidis.ParseURL reads, which rueidis users already write:
// lockctl takes those that mean what its own do (valkey:// and valkeys://,
// unix:///path/to/redis.sock, ?db=N, ?skip_verify, ?write_timeout=D,
// ?client_cache=0, ?max_retries=0), and refuses the others with what to
// write instead.

// rueidisParams are the query parameters of rueidis URLs that lockctl
// takes, on top of its own.
var rueidisParams = []string{"db", "write_timeout", "client_cache", "max_retries"}

// rueidisForms refuses the parameters of rueidis URLs whose meaning
// lockctl writes otherwise, and checks the values of those it takes.
func rueidisForms(u *storeURL, mode redisMode, useTLS bool) error {
	base := strings.TrimSuffix(strings.TrimSuffix(u.scheme, "+cluster"), "+sentinel")
	if _, ok := u.param("addr"); ok {
		return u.bad("query parameter addr", "lockctl takes every host in the URL: write %[1]s+cluster://HOST1:PORT,HOST2:PORT for a Redis Cluster, %[1]s+sentinel://HOST1:26379,HOST2:26379/MASTER for Sentinels, or repeat --store for a Redlock over independent servers", base)
	}
	if m, ok := u.param("master_set"); ok {
		return u.bad("query parameter master_set", "write the Sentinels and the master as %s+sentinel://SENTINEL:26379[,SENTINEL2:26379]/%s", base, m)
	}
	if _, ok := u.param("protocol"); ok {
		return u.bad("query parameter protocol", "drop it: the client picks the protocol itself (RESP3, or RESP2 with servers that lack HELLO)")
	}
	if v, ok := u.param("client_cache"); ok && v != "0" {
		return u.bad("query parameter client_cache", "lockctl never uses client-side caching: drop it, or write client_cache=0")
	}
	if v, ok := u.param("max_retries"); ok && v != "0" {
		return u.bad("query parameter max_retries", "the client never retries lock calls (lockctl's locker does, knowing which are safe to repeat): drop it, or write max_retries=0")
	}
	if _, ok := u.param("skip_verify"); ok {
		if !useTLS {
			return u.bad("query parameter skip_verify", "TLS settings need a TLS scheme: %s://", tlsScheme(u.scheme))
		}
		if _, both := u.param("insecure"); both {
			return u.bad("query parameter skip_verify", "give insecure or skip_verify, not both")
		}
		u.query["insecure"] = u.query["skip_verify"]
		delete(u.query, "skip_verify")
	}
	if db, ok := u.param("db"); ok {
		if mode == redisCluster {
			return u.bad("query parameter db", "a Redis Cluster has only database 0")
		}
		if inPath := redisPathDB(u, mode); inPath != "" && inPath != db {
			return u.bad("query parameter db", "%q, but the path says database %q", db, inPath)
		}
	}
	return nil
}

// redisPathDB returns the database number written in the URL's path.
func redisPathDB(u *storeURL, mode redisMode) string {
	switch mode {
	case redisSingle:
		return u.path
	case redisSentinel:
		_, db, _ := strings.Cut(u.path, "/")
		return db
	}
	return ""
}

// unixSocket sets opt to reach the one server at the socket of a unix://
// URL: unix:///path/to/redis.sock.
func unixSocket(u *storeURL, opt *rueidis.ClientOption) error {
	if len(u.hosts) > 0 || u.path == "" {
		return u.bad("socket", "want unix:///PATH/TO/redis.sock (three slashes: the path is absolute)")
	}
	opt.InitAddress = []string{"/" + u.path}
	opt.ForceSingleClient = true
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		return d.DialContext(ctx, "unix", addr)
	}
	return nil
}

// tlsScheme returns the TLS form of a Redis scheme: rediss+cluster for
// redis+cluster.
func tlsScheme(scheme string) string {
	name, mode, _ := strings.Cut(scheme, "+")
	if mode != "" {
		mode = "+" + mode
	}
	return name + "s" + mode
}
