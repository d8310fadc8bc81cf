package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockkit/lock/stores/etcd"
)

// etcd://[user:pass@]host[:port][,host[:port]...][?params]   an etcd cluster (its members' client URLs)
// etcds://...                                                  the same over TLS
//
// One URL is one cluster: a lock held by a majority of its members. The
// user and password authenticate with etcd's own auth.

var etcdParams = []string{"prefix", "name", "dial_timeout", "timeout", "min_ttl", "lease_slack"}

func init() {
	schemes["etcd"] = func(u *storeURL) (*storeSpec, error) { return parseEtcd(u, false) }
	schemes["etcds"] = func(u *storeURL) (*storeSpec, error) { return parseEtcd(u, true) }
}

func parseEtcd(u *storeURL, useTLS bool) (*storeSpec, error) {
	known := etcdParams
	if useTLS {
		known = append(append([]string{}, etcdParams...), tlsParams...)
	}
	if err := u.checkParams(known...); err != nil {
		if !useTLS {
			for _, p := range tlsParams {
				if _, ok := u.param(p); ok {
					return nil, u.bad("query parameter "+p, "TLS settings need the TLS scheme: etcds://")
				}
			}
		}
		return nil, err
	}
	addrs, err := u.addrs(2379, 1, 0, "")
	if err != nil {
		return nil, err
	}
	if u.path != "" {
		return nil, u.bad("path", "%q: etcd URLs have no path (set the key prefix with ?prefix=)", "/"+u.path)
	}
	if (u.user != "") != u.hasPassword {
		return nil, u.bad("user", "etcd's auth needs a user name and a password: etcd://USER:PASSWORD@HOST (or neither, with a client certificate over etcds://)")
	}
	cfg := clientv3.Config{
		Endpoints: addrs,
		Username:  u.user,
		Password:  u.password,
		Logger:    zap.NewNop(), // failures reach the user as errors
	}
	if cfg.DialTimeout, err = u.durationParam("dial_timeout", 5*time.Second); err != nil {
		return nil, err
	}
	if useTLS {
		if cfg.TLS, err = tlsConfig(u); err != nil {
			return nil, err
		}
	}
	name := u.name()
	opts := []etcd.Option{etcd.WithName(name)}
	if prefix, ok := u.param("prefix"); ok {
		opts = append(opts, etcd.WithPrefix(prefix))
	}
	timeout, err := u.durationParam("timeout", 5*time.Second)
	if err != nil {
		return nil, err
	}
	opts = append(opts, etcd.WithTimeout(timeout))
	if _, ok := u.param("min_ttl"); ok {
		d, err := u.durationParam("min_ttl", etcd.DefaultMinTTL)
		if err != nil {
			return nil, err
		}
		if d%time.Second != 0 {
			return nil, u.bad("query parameter min_ttl", "%v: want whole seconds, as etcd's leases count", d)
		}
		opts = append(opts, etcd.WithMinTTL(d))
	}
	if slack, err := u.boolParam("lease_slack"); err != nil {
		return nil, err
	} else if _, set := u.param("lease_slack"); set && !slack {
		opts = append(opts, etcd.WithoutLeaseSlack())
	}

	prefix, ok := u.param("prefix")
	if !ok {
		prefix = etcd.DefaultPrefix
	}
	spec := &storeSpec{display: u.display, name: name, kind: "etcd", fences: true, servers: serverIDs("etcd", addrs...),
		record: storeRecord{Kind: "etcd", Servers: addrs, Prefix: prefix}}
	spec.open = func(ctx context.Context) (*openStore, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := cfg
		cfg.DialTimeout = dialBound(ctx, cfg.DialTimeout)
		client, err := clientv3.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", strings.Join(addrs, ","), err)
		}
		s, err := etcd.New(client, opts...)
		if err != nil {
			_ = client.Close()
			return nil, &usageError{err: fmt.Errorf("store %s: %w", name, err)}
		}
		// The client connects lazily: ask the cluster something now, so
		// that an unreachable cluster or a wrong password fails here.
		ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
		if _, err := s.Exists(ctx, "lockctl-connection-check"); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("cannot reach %s: %w", strings.Join(addrs, ","), err)
		}
		return &openStore{
			Store: s,
			close: func() {
				// Revoke the leases the store keeps for reuse, rather than
				// leave them to expire a TTL later.
				ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
				defer cancel()
				_ = s.Close(ctx)
				_ = client.Close()
			},
			forceRelease: s.ForceRelease,
			lastFence:    s.LastFence,
			members: func(ctx context.Context) ([]string, error) {
				resp, err := client.MemberList(ctx)
				if err != nil {
					return nil, err
				}
				var addrs []string
				for _, m := range resp.Members {
					for _, cu := range m.ClientURLs {
						if u, err := url.Parse(cu); err == nil && u.Host != "" {
							addrs = append(addrs, u.Host)
						}
					}
				}
				return addrs, nil
			},
		}, nil
	}
	return spec, nil
}
