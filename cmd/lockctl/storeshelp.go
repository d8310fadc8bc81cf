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
      run it with -M, or use a Redlock over several servers. Locks carry no
      fence.
  memory://[NAME]
      A store in lockctl's own memory: it keeps out only the workers of
      check and bench, which run in one process. For trying lockctl out.

One redis:// or memcache:// URL is one server. For a Redlock over several
independent servers, repeat --store, one per server:
  --store redis://r1:6379 --store redis://r2:6379 --store redis://r3:6379

Redis parameters:
  prefix=P            key prefix (default "lock:"), no { or }
  name=N              the store's name in messages (default: the URL)
  dial_timeout=D      connection timeout (default 5s)
  client_name=N       CLIENT SETNAME (default lockctl)
  wait_replicas=N     wait until N replicas have each lock (WAIT)...
  wait_timeout=D      ...for at most D (default 100ms)
  fence_retention=D   how long fence counters live (default 24h)
  db=N                the database, as /DB in the path
  write_timeout=D     bound on each write to a connection
  client_cache=0, max_retries=0
                      taken, as rueidis URLs write them: lockctl never uses
                      client-side caching, and the client never retries
                      lock calls. rueidis's addr=, master_set= and protocol=
                      are refused with what to write instead.
TLS parameters (rediss and valkeys schemes):
  ca=FILE             PEM file of the authorities to trust (default: the system's)
  cert=FILE, key=FILE PEM files of a client certificate
  server_name=N       the name to verify (default: each connection's host)
  insecure=true       do not verify the server's certificate (or skip_verify)
Sentinel parameters:
  sentinel_user=U, sentinel_password=P   the Sentinels' own credentials
memcache parameters:
  prefix=P            key prefix (default "lock:")
  name=N              the store's name in messages (default: the URL)
  timeout=D           bound on each request (default 500ms)
  max_idle=N          idle connections kept (default 64)

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
`
