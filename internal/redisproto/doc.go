// Package redisproto is what the Redis lock stores share, whatever client
// they talk through: the key layout (prefix, hash tag, escaping, the
// suffixes of the fence counter and the waiters' queue, the restart
// guard's marker), the shard channel a waiter listens on, the Lua scripts
// with their SHA-1s, and the limits and margins that go with them.
//
// The rueidis store (stores/redis) and the go-redis store
// (stores/goredis, a module of its own) both build on it, so a lock taken
// through one is seen, refused, released and waited for through the
// other: they are one protocol on the server, spoken by two clients.
// Nothing here talks to a server.
package redisproto
