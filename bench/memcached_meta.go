package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// rawMeta is the floor of a store made WithServer: the least a lock and
// its release cost in memcached's meta protocol, two round trips — a meta
// set in add mode that answers the item's CAS id ("ms <key> <size>
// T<exp> ME c"), and a meta delete by that id ("md <key> C<cas>") — with
// a connection of its own per worker, no pool and no fence.
func rawMeta(delay time.Duration) func(e env) (client, error) {
	return func(e env) (client, error) {
		exp := int64((e.ttl + time.Second - 1) / time.Second)
		var mu sync.Mutex
		var conns []net.Conn
		return clientFuncs{
			w: func() worker {
				dial := func() (net.Conn, error) {
					nc, err := net.DialTimeout("tcp", e.memcached, time.Second)
					if err == nil {
						mu.Lock()
						conns = append(conns, nc)
						mu.Unlock()
					}
					return nc, err
				}
				nc, err := dial()
				if err != nil {
					return failedWorker{err}
				}
				return &rawMetaWorker{nc: nc, r: bufio.NewReader(nc), dial: dial, token: []byte(rawToken()), exp: exp, delay: delay}
			},
			c: func() {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range conns {
					_ = c.Close()
				}
			},
		}, nil
	}
}

// failedWorker is a worker whose client could not be made: every call
// fails with err.
type failedWorker struct{ err error }

func (f failedWorker) tryLock(context.Context, string) (bool, error) { return false, f.err }
func (f failedWorker) lock(context.Context, string) error            { return f.err }
func (f failedWorker) unlock(context.Context) error                  { return f.err }

type rawMetaWorker struct {
	nc    net.Conn
	r     *bufio.Reader
	dial  func() (net.Conn, error)
	buf   []byte
	token []byte
	exp   int64
	delay time.Duration
	key   string
	cas   []byte // the CAS id of the lock it holds
}

// call sends req and reads the reply's first line. After a failure the
// connection is replaced: a late reply on it would answer the next call.
func (w *rawMetaWorker) call(req []byte) ([]byte, error) {
	err := w.nc.SetDeadline(time.Now().Add(time.Second))
	if err == nil {
		_, err = w.nc.Write(req)
	}
	var line []byte
	if err == nil {
		line, err = w.r.ReadSlice('\n')
	}
	if err != nil {
		w.redial()
	}
	return line, err
}

// redial replaces the worker's connection (the client closes every
// connection it dialed, the replaced ones included).
func (w *rawMetaWorker) redial() {
	_ = w.nc.Close()
	if nc, err := w.dial(); err == nil {
		w.nc, w.r = nc, bufio.NewReader(nc)
	}
}

func (w *rawMetaWorker) tryLock(_ context.Context, name string) (bool, error) {
	w.key = name
	b := append(w.buf[:0], "ms "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(w.token)), 10)
	b = append(b, " T"...)
	b = strconv.AppendInt(b, w.exp, 10)
	b = append(b, " ME c\r\n"...)
	b = append(b, w.token...)
	b = append(b, "\r\n"...)
	w.buf = b
	line, err := w.call(b)
	switch {
	case err != nil:
		return false, err
	case bytes.HasPrefix(line, []byte("NS")):
		return false, nil
	case !bytes.HasPrefix(line, []byte("HD c")):
		return false, fmt.Errorf("ms: %q", line)
	}
	w.cas = append(w.cas[:0], bytes.TrimRight(line[len("HD c"):], "\r\n")...)
	return true, nil
}

func (w *rawMetaWorker) lock(ctx context.Context, name string) error {
	return poll(ctx, w.delay, func() (bool, error) { return w.tryLock(ctx, name) })
}

func (w *rawMetaWorker) unlock(context.Context) error {
	b := append(w.buf[:0], "md "...)
	b = append(b, w.key...)
	b = append(b, " C"...)
	b = append(b, w.cas...)
	b = append(b, "\r\n"...)
	w.buf = b
	line, err := w.call(b)
	switch {
	case err != nil:
		return err
	case bytes.HasPrefix(line, []byte("HD")):
		return nil
	case bytes.HasPrefix(line, []byte("EX")), bytes.HasPrefix(line, []byte("NF")):
		return errNotReleased
	}
	return fmt.Errorf("md: %q", line)
}
