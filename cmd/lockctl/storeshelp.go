package main

// storesHelp is lockctl help stores.
const storesHelp = `Stores are given as URLs: with --store, repeated for several stores, or in
$LOCKCTL_STORES, separated by spaces or newlines (commas separate the hosts
of one URL), so that passwords need not appear on the command line. --store
flags replace $LOCKCTL_STORES. One store gives a single-store lock; several
give a Redlock, held when a quorum of them grants it (--quorum majority,
all, or a number above half).

  redis://[USER:PASSWORD@]HOST[:PORT][/DB][?PARAMS]
      One Redis server (port 6379, database 0 by default). Redis 6 or later.
  rediss://...
      The same over TLS.
  redis+cluster://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][?PARAMS]
  rediss+cluster://...
      A Redis Cluster, found from one or more seed nodes.
  redis+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB][?PARAMS]
  rediss+sentinel://...
      The master that Sentinels (port 26379 by default) know as MASTER.
      USER and PASSWORD are the master's; see sentinel_password below.
  valkey://, valkeys://, valkey+cluster://, valkey+sentinel://...
      The same as the redis schemes, for Valkey (or Redis) servers.
  unix:///PATH/TO/redis.sock[?PARAMS]
      One Redis server on a unix socket; the database as ?db=N.
  memcache://HOST[:PORT][?PARAMS]
      One memcached server (port 11211 by default). TTLs round up to whole
      seconds, so use TTLs of several seconds. memcached may evict a lock
      when it runs out of memory, and forgets them all when it restarts:
      run it with -M, or use a Redlock over several servers. Fences come
      from one counter per key prefix.
  etcd://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][?PARAMS]
  etcds://...
      An etcd cluster, through the client URLs of its members (port 2379
      by default): a lock holds while a majority of them lives, and its
      fence is an etcd revision. TTLs round up to whole seconds, at least
      2s (etcd's shortest lease with its default election timeout); from
      10s on, a lease lasts a tenth longer than its lock.
      USER and PASSWORD are etcd's own auth; etcds:// is the same over TLS.
  postgres://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/DATABASE][?PARAMS]
  postgresql://...
      A table of a PostgreSQL database: TTLs on the database's clock,
      fences from a sequence, locks that survive a crash of the server.
      Parameters other than lockctl's own go to the driver, as libpq
      reads them (sslmode, connect_timeout...; PGPASSWORD and ~/.pgpass).
  memory://[NAME]
      A store in lockctl's own memory: it keeps out only the workers of
      check and bench, which run in one process. For trying lockctl out.

One redis:// or memcache:// URL is one server. For a Redlock over several
independent servers, repeat --store, one per server:
  --store redis://r1:6379 --store redis://r2:6379 --store redis://r3:6379
Two URLs on one server (another spelling, database or key prefix) are
refused (status 2): the Redlock would count that server's answers twice.
localhost, 127.0.0.1 and [::1] on one port are one server; other host
names are compared as written, not looked up.

Redis parameters:
  prefix=P            key prefix (default "lock:"), no { or }
  name=N              the store's name in messages (default: the URL)
  dial_timeout=D      connection timeout (default 5s)
  client_name=N       CLIENT SETNAME (default lockctl)
  wait_replicas=N     wait until N replicas have each lock (WAIT)...
  wait_timeout=D      ...for at most D (default 100ms)
  db=N                the database, as /DB in the path
  write_timeout=D     bound on each write to a connection
  client_cache=0, max_retries=0
                      taken, as rueidis URLs write them: lockctl never uses
                      client-side caching, and the client never retries
                      lock calls. rueidis's addr=, master_set= and protocol=
                      are refused with what to write instead.
TLS parameters (rediss, valkeys and etcds schemes):
  ca=FILE             PEM file of the authorities to trust (default: the system's)
  cert=FILE, key=FILE PEM files of a client certificate
  server_name=N       the name to verify (default: each connection's host)
  insecure=true       do not verify the server's certificate (or skip_verify)
Sentinel parameters:
  sentinel_user=U, sentinel_password=P   the Sentinels' own credentials
etcd parameters (and the TLS parameters above, with etcds://):
  prefix=P            key prefix (default "lock/")
  name=N              the store's name in messages (default: the URL)
  dial_timeout=D      connection timeout (default 5s)
  timeout=D           bound on each call (default 5s): a dying leader's
                      writes are otherwise answered only after etcd's own
                      request timeout
  min_ttl=D           the shortest TTL accepted, whole seconds (default 2s):
                      1.5 times the cluster's election timeout, rounded up
  lease_slack=false   leases last their lock's TTL exactly: a dead holder's
                      lock frees at its TTL, not up to a tenth later (the
                      default keeps leases of locks of 10s or more a tenth
                      longer, so that most acquisitions renew none)
postgres parameters:
  table=T             the locks' table (default lockkit_locks)
  schema=S            its schema (default: the search_path's)
  name=N              the store's name in messages (default: the URL)
  migrate=true        create the table and its sequence if missing
memcache parameters:
  prefix=P            key prefix (default "lock:")
  name=N              the store's name in messages (default: the URL)
  timeout=D           bound on each request (default 500ms)
  max_idle=N          idle connections kept, at least 1 (default 64)

A password may hold @, : and / as they are; write ? as %3F and % as %25
(in parameters too, where & is %26 and + stays +). Passwords are shown as
xxxxx in every message.

Examples:
  redis://localhost:6379
  rediss://default:s3cret@redis.example.com:6380/2?ca=/etc/ssl/redis-ca.pem
  redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000?prefix=jobs:
  redis+sentinel://:s3cret@10.0.0.5:26379,10.0.0.6:26379/mymaster
  unix:///run/redis/redis.sock?db=1
  memcache://10.0.0.7:11211?prefix=locks:
  etcds://app:s3cret@10.0.0.8:2379,10.0.0.9:2379,10.0.0.10:2379?ca=/etc/ssl/etcd-ca.pem
  postgres://app@db.internal/app?sslmode=verify-full&migrate=true
`
