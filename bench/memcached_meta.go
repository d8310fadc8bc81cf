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
				nc, err := net.DialTimeout("tcp", e.memcached, time.Second)
				if err != nil {
					return failedWorker{err}
				}
				mu.Lock()
				conns = append(conns, nc)
				mu.Unlock()
				return &rawMetaWorker{nc: nc, r: bufio.NewReader(nc), token: []byte(rawToken()), exp: exp, delay: delay}
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
	buf   []byte
	token []byte
	exp   int64
	delay time.Duration
	key   string
	cas   []byte // the CAS id of the lock it holds
}

func (w *rawMetaWorker) call(req []byte) ([]byte, error) {
	if err := w.nc.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return nil, err
	}
	if _, err := w.nc.Write(req); err != nil {
		return nil, err
	}
	return w.r.ReadSlice('\n')
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
