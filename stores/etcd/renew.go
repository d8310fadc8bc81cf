package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxIdleStreams is how many keepalive streams a store keeps open between
// renewals.
const maxIdleStreams = 64

// renewer renews leases over LeaseKeepAlive streams that it keeps open
// between renewals, one renewal at a time on each, in place of a stream
// per renewal (as the client's KeepAliveOnce opens), whose setup costs
// more than the renewal itself on both sides. One renewal at a time:
// etcd answers the requests of a stream one after the other, and a
// follower forwards each to the leader, so that renewals sharing a stream
// would queue behind each other.
type renewer struct {
	leases pb.LeaseClient
	client *clientv3.Client
	mu     sync.Mutex
	idle   []*keepalive // most recently used last
	gen    int          // incremented by close: older streams are not kept
	sent   atomic.Int64 // renewals sent, for the tests
}

// keepalive is one LeaseKeepAlive stream, carrying one renewal at a time.
type keepalive struct {
	gen    int
	ctx    context.Context // the stream's: it lives until cancel
	cancel context.CancelFunc
	stream pb.Lease_LeaseKeepAliveClient // nil until opened
}

// renew renews lease id and returns its TTL in seconds, or
// rpctypes.ErrLeaseNotFound if etcd does not know it. Any other error
// leaves it unknown whether the lease was renewed: the stream is then
// closed, never used again.
func (r *renewer) renew(ctx context.Context, id int64) (int64, error) {
	k := r.take()
	r.sent.Add(1)
	stop := context.AfterFunc(ctx, k.cancel)
	resp, err := k.renew(r.leases, id)
	if !stop() {
		return 0, ctx.Err() // the stream was cancelled with ctx
	}
	if err == nil && resp.ID != id {
		err = fmt.Errorf("the answer is for lease %x, not %x", resp.ID, id)
	}
	if err != nil {
		k.cancel()
		return 0, fmt.Errorf("etcd lease keepalive: %w", err)
	}
	r.put(k)
	if resp.TTL <= 0 {
		return 0, rpctypes.ErrLeaseNotFound
	}
	return resp.TTL, nil
}

// take returns an idle stream, or a new one to open.
func (r *renewer) take() *keepalive {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.idle); n > 0 {
		k := r.idle[n-1]
		r.idle = r.idle[:n-1]
		return k
	}
	// A stream lives until it fails, the store is closed or the client is;
	// it requires a leader, so that a member cut off from the cluster ends
	// it instead of holding the renewal.
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(r.client.Ctx()))
	return &keepalive{gen: r.gen, ctx: ctx, cancel: cancel}
}

// put keeps k for the next renewal, or closes it.
func (r *renewer) put(k *keepalive) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k.gen != r.gen || len(r.idle) >= maxIdleStreams {
		k.cancel()
		return
	}
	r.idle = append(r.idle, k)
}

// renew opens the stream if it is new, and renews lease id over it.
func (k *keepalive) renew(leases pb.LeaseClient, id int64) (*pb.LeaseKeepAliveResponse, error) {
	if k.stream == nil {
		s, err := leases.LeaseKeepAlive(k.ctx, waitForReady)
		if err != nil {
			return nil, err
		}
		k.stream = s
	}
	if err := k.stream.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	} // on io.EOF, the stream broke: Recv returns why
	return k.stream.Recv()
}

// close closes the idle streams; the streams in use are closed when their
// renewal ends. A later renewal opens another.
func (r *renewer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.idle {
		k.cancel()
	}
	r.idle = nil
	r.gen++
}
