package main

import (
	"context"
	"fmt"

	gomemcache "github.com/bradfitz/gomemcache/memcache"

	"github.com/lockkit/lock/stores/memcache"
)

// memcache://host[:port][?prefix=...&name=...&timeout=...&max_idle=...]
//
// One URL is one server: a gomemcache client over several servers would
// put each lock on one of them by key hash, and losing that server would
// lose its locks. Several servers are several --store flags: a Redlock.

func init() { schemes["memcache"] = parseMemcache }

func parseMemcache(u *storeURL) (*storeSpec, error) {
	if err := u.checkParams("prefix", "name", "timeout", "max_idle"); err != nil {
		return nil, err
	}
	if err := u.noUser(); err != nil {
		return nil, err
	}
	addrs, err := u.addrs(11211, 1, 1, "one memcache:// URL is one server; for a Redlock over several servers repeat --store, one per server")
	if err != nil {
		return nil, err
	}
	if u.path != "" {
		return nil, u.bad("path", "%q: memcache:// URLs have no path", "/"+u.path)
	}
	timeout, err := u.durationParam("timeout", gomemcache.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	maxIdle, err := u.intParam("max_idle", 64)
	if err != nil {
		return nil, err
	}
	if maxIdle == 0 {
		// gomemcache reads 0 as its default, two.
		return nil, u.bad("query parameter max_idle", "0: want at least 1 (the client keeps idle connections for reuse; 0 would mean its default of 2)")
	}
	name := u.name()
	opts := []memcache.Option{memcache.WithName(name)}
	if prefix, ok := u.param("prefix"); ok {
		opts = append(opts, memcache.WithPrefix(prefix))
	}
	// New connects to nothing: check the options now.
	if _, err := memcache.New(gomemcache.New(), opts...); err != nil {
		return nil, u.bad("query parameter prefix", "%v", err)
	}
	prefix, ok := u.param("prefix")
	if !ok {
		prefix = memcache.DefaultPrefix
	}
	spec := &storeSpec{display: u.display, name: name, kind: "memcache", fences: true, raises: true, servers: serverIDs("memcache", addrs...),
		record: storeRecord{Kind: "memcache", Servers: addrs, Prefix: prefix}}
	spec.open = func(ctx context.Context) (*openStore, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var servers gomemcache.ServerList
		if err := servers.SetServers(addrs[0]); err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", addrs[0], err)
		}
		client := gomemcache.NewFromSelector(&servers)
		client.Timeout = dialBound(ctx, timeout)
		client.MaxIdleConns = maxIdle
		if err := client.Ping(); err != nil {
			client.Close()
			return nil, fmt.Errorf("cannot connect to %s: %w", addrs[0], err)
		}
		client.Timeout = timeout
		// The client's one server: fenced locks take one round trip.
		s, err := memcache.New(client, append(opts, memcache.WithServer(addrs[0]))...)
		if err != nil {
			client.Close()
			return nil, err
		}
		return &openStore{Store: s, close: func() { s.Close(); client.Close() }, forceRelease: s.ForceRelease}, nil
	}
	return spec, nil
}
