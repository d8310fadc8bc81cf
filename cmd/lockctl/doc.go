// Command lockctl takes lockkit's distributed locks from the shell: flock(1)
// across machines, on Redis (a server, a Cluster, a Sentinel-managed
// master), memcached, a Redlock over several of them, or etcd.
//
//	lockctl run [flags] RESOURCE [--] COMMAND [ARGS...]  run a command under a lock
//	lockctl elect [flags] ROLE [--] COMMAND [ARGS...]    run a command while elected leader
//	lockctl acquire [flags] RESOURCE                     take a lock for the next steps of a job
//	lockctl extend --lock FILE [flags]                   extend it
//	lockctl release --lock FILE [flags]                  release it
//	lockctl release --force [--yes] [flags] RESOURCE     delete a lock whoever holds it
//	lockctl status [flags] RESOURCE                      is it held, for how long, which fence
//	lockctl check [flags]                                do the stores keep mutual exclusion, and how fast
//	lockctl bench [flags]                                lock+unlock throughput and latency
//	lockctl completion bash|zsh|fish                     shell completion
//	lockctl --version                                    the version it was built from
//
// Stores are URLs given with --store (repeat it for a Redlock) or in
// $LOCKCTL_STORES: redis://, rediss://, redis+cluster://,
// redis+sentinel://, their valkey:// forms, unix://, memcache://,
// etcd://, etcds://, postgres:// and memory://. Run lockctl help for the
// exit statuses, lockctl help stores for every URL form, and lockctl help
// COMMAND for a command's flags and examples; docs/lockctl.md shows each
// command with its output.
//
// Install it with go install github.com/lockkit/lock/cmd/lockctl@latest.
// With nothing installed but Go, lockctl check tests the in-process
// memory store:
//
//	go run github.com/lockkit/lock/cmd/lockctl@latest check
//
// # Capabilities
//
// What each store gives the commands:
//   - redis (every form): run --fence-env, status with TTL and last fence,
//     waiting woken by releases (Redis 7).
//   - memcache: run --fence-env, no TTL or fence in status, TTLs in whole
//     seconds; waiting polls.
//   - etcd: run --fence-env (fences are revisions), status with TTL (whole
//     seconds) and the holder's fence, waiting woken by releases.
//   - postgres: run --fence-env (fences from one sequence), status with
//     TTL, waiting woken by releases (LISTEN/NOTIFY).
//   - memory: every capability, within one lockctl process (so acquire
//     refuses it).
//   - several stores (Redlock): run --fence-env when every store can raise
//     its fences (all but etcd); status per store.
//
// # Design
//
// main.go only wires the process's streams to app.main. Each command has
// its own file (run.go, acquire.go, status.go, release.go, check.go,
// bench.go, completion.go), with what run and acquire share in take.go and
// the lock files of acquire in lockfile.go; the store URLs are parsed in
// urls.go and store_*.go (rueidis's URL forms in rueidisurl.go), opened in
// stores.go; exit statuses are in exitcodes.go. check drives internal/contention, the
// harness of the library's own fault suite. The end-to-end tests build
// the binary with the test-only broken-memory:// store (build tag
// lockctl_broken) and run it against real servers.
package main
