package main

import (
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The holder name of the locks lockctl takes (lock.Options.Holder), which
// status shows: "HOST PID COMMAND SINCE".
//   - run: lockctl's own pid and the command it runs.
//   - acquire: the pid of the process that ran lockctl acquire (its job,
//     which holds the lock once lockctl exits) and "lockctl acquire".
//
// SINCE is when lockctl began to take the lock, in UTC to the second
// (RFC 3339). The command is cut to maxHolderCommand bytes, and anything
// the holder may not contain ('~', control characters) becomes '?'.

// maxHolderCommand bounds the command in a holder name, in bytes.
const maxHolderCommand = 64

// holderName returns the holder name of a lock taken on host by pid for
// command, starting at since. It always fits lock.MaxHolderLen: 64 bytes
// of host, 64 of command, a pid and a time.
func holderName(host string, pid int, command []string, since time.Time) string {
	host = holderPart(host, 64)
	if host == "" {
		host = "?"
	}
	cmd := holderPart(strings.Join(command, " "), maxHolderCommand)
	return host + " " + strconv.Itoa(pid) + " " + cmd + " " + since.UTC().Format(time.RFC3339)
}

// holderPart makes s fit a holder name in at most n bytes: each rune a
// holder may not contain becomes '?', and a longer s is cut at a rune
// boundary and ends in "…".
func holderPart(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '~' || r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// hostname is this machine's name for holder names, or "?".
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// runHolder is the holder name of lockctl run COMMAND.
func runHolder(command []string) string {
	return holderName(hostname(), os.Getpid(), command, time.Now())
}

// acquireHolder is the holder name of lockctl acquire.
func acquireHolder() string {
	return holderName(hostname(), os.Getppid(), []string{"lockctl", "acquire"}, time.Now())
}
