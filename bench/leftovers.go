package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// leftovers are the keys a cell left on its servers once every lock was
// released: lock keys; other state kept per resource (fence counters,
// waiters' queues: lockkit's keys ending in ":fence" or holding
// ":waiters"); and state kept once per server or per store, such as a
// server's fence counter. Every name a cell locks starts with the cell's
// prefix, so a key holding it is the cell's, per resource; a key holding
// the prefix of another cell that shared the servers (env.shared) is that
// cell's; a key holding none is server-wide state, the cell's own when it
// ran alone on servers emptied before it (see runner.leftovers).
type leftovers struct {
	Locks       int    `json:"locks"`
	PerResource int    `json:"perResourceState"`
	ServerWide  int    `json:"serverWide"`
	Err         string `json:"error,omitempty"`
}

// leftoverFunc counts what a cell left on its servers, and empties them
// for the next cell unless env.keep is set.
type leftoverFunc func(e env) leftovers

func (l *leftovers) add(key string, e env) {
	switch {
	case !strings.Contains(key, e.prefix):
		if !slices.ContainsFunc(e.shared, func(p string) bool { return strings.Contains(key, p) }) {
			l.ServerWide++
		}
	case strings.HasSuffix(key, ":fence") || strings.Contains(key, ":waiters"):
		l.PerResource++
	default:
		l.Locks++
	}
}

func (l *leftovers) failed(err error) {
	if err != nil && l.Err == "" {
		l.Err = err.Error()
	}
}

func (l leftovers) String() string {
	if l.Err != "" {
		return "?: " + l.Err
	}
	return fmt.Sprintf("%d/%d/%d", l.Locks, l.PerResource, l.ServerWide)
}

// redisLeftovers counts every key on the five Redis servers, then flushes
// them.
func redisLeftovers(e env) (l leftovers) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, addr := range e.redis {
		c, err := newRueidis(addr)
		if err != nil {
			l.failed(err)
			continue
		}
		var cursor uint64
		for {
			s, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
			if err != nil {
				l.failed(err)
				break
			}
			for _, k := range s.Elements {
				l.add(k, e)
			}
			if cursor = s.Cursor; cursor == 0 {
				break
			}
		}
		if !e.keep {
			l.failed(c.Do(ctx, c.B().Flushall().Build()).Error())
		}
		c.Close()
	}
	return l
}

// memcachedLeftovers lists the live items of the memcached server (with
// the LRU crawler's metadump), then flushes it.
func memcachedLeftovers(e env) (l leftovers) {
	var lines []string
	var err error
	for range 50 { // the crawler answers BUSY while it crawls for itself
		if lines, err = memcachedCommand(e.memcached, "lru_crawler metadump all"); !errors.Is(err, errBusy) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.failed(err)
	for _, line := range lines {
		k, ok := strings.CutPrefix(strings.Fields(line)[0], "key=")
		if !ok {
			continue
		}
		if u, err := url.QueryUnescape(k); err == nil {
			k = u
		}
		l.add(k, e)
	}
	if !e.keep {
		_, err = memcachedCommand(e.memcached, "flush_all")
		l.failed(err)
	}
	return l
}

var errBusy = errors.New("memcached: BUSY")

// memcachedCommand sends one command of memcached's text protocol and
// returns the lines of its answer, without the last one when it is END
// or OK.
func memcachedCommand(addr, cmd string) ([]string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "END" || line == "OK":
			return lines, nil
		case strings.HasPrefix(line, "BUSY"):
			return nil, errBusy
		case strings.HasPrefix(line, "VERSION "):
			return []string{line}, nil
		case strings.Contains(line, "ERROR"):
			return nil, fmt.Errorf("memcached: %s: %s", cmd, line)
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("memcached: %s: the connection closed before the end of the answer", cmd)
}
