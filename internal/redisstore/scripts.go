package redisstore

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
)

// Script is a Lua script of the store. It runs by its SHA-1 (EVALSHA)
// and is sent in full (EVAL, which also loads it) when the server answers
// NOSCRIPT: after SCRIPT FLUSH, a restart or a failover to a node that
// never ran it. So NOSCRIPT never reaches a caller, and the usual cost is
// one EVALSHA.
type Script struct {
	Name string // its file, for errors
	Src  string // the Lua source
	SHA  string // its SHA-1, in hex, for EVALSHA
}

//go:embed lua/*.lua
var luaFiles embed.FS

// load returns the script of the file name.lua. A line "--#include
// other" in a file stands for the file other.lua: a prelude that several
// scripts run first (permit_prelude.lua), or a part that a script runs
// only on the path that needs it (grant.lua): Lua creates a function each
// time its definition runs, and the garbage of that costs the server more
// than the commands of a release.
func load(name string) *Script {
	src := luaFile(name)
	sum := sha1.Sum(src)
	return &Script{Name: name, Src: string(src), SHA: hex.EncodeToString(sum[:])}
}

// luaFile returns the source of the file name.lua, its includes spliced
// in.
func luaFile(name string) []byte {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	var src []byte
	for line := range strings.Lines(string(b)) {
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), "--#include "); ok {
			src = append(src, luaFile(inc)...)
			continue
		}
		src = append(src, line...)
	}
	return src
}

// The scripts; each file says what its script does, with its KEYS, ARGV
// and reply.
var (
	// releaseScript frees a lock held under a token and hands it to the
	// first waiter in line.
	releaseScript = load("release")
	// waitScript puts a subscription in line for the next release.
	waitScript = load("wait")
	// passScript hands a wake nobody used to the next in line.
	passScript = load("pass")
	// queueScript is a queued acquisition: take the lock, or get in line
	// for it.
	queueScript = load("queue")
	// claimScript takes a lock that is free or reserved for a woken
	// subscription.
	claimScript = load("claim")
	// leaveScript takes a dropped subscription out of line.
	leaveScript = load("leave")
	// extendScript is compare-and-extend.
	extendScript = load("extend")
	// forceReleaseScript frees a lock whoever holds it.
	forceReleaseScript = load("force_release")
	// liftScript takes a fence, lifted to the server's clock.
	liftScript = load("lift")
	// raiseScript raises a fence counter to a fence.
	raiseScript = load("raise")
	// guardedScript acquires behind the restart guard.
	guardedScript = load("guarded")
	// ttlScript reads a lock's PTTL, refusing a key of another type.
	ttlScript = load("ttl")
)

// Scripts returns every script of the store, for tests.
func Scripts() []*Script {
	return []*Script{releaseScript, waitScript, passScript, queueScript, claimScript, leaveScript, extendScript, forceReleaseScript, liftScript, raiseScript, guardedScript, ttlScript,
		permitAcquireScript, permitReleaseScript, permitExtendScript, permitCountScript, permitWaitScript, permitPassScript}
}
