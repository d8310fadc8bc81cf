package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/lockkit/lock"
)

// storeSpec is a store named by a --store URL, ready to be opened.
type storeSpec struct {
	display   string // the URL with its password hidden
	name      string // the store's name in every message and output: its URL's name parameter, or else display
	kind      string // "redis", "memcache", "memory"
	fences    bool   // the store hands out fences (lock.Fencer)
	raises    bool   // its fences can be raised (lock.FenceRaiser), so that a Redlock over it fences
	inProcess bool   // the store lives in lockctl's memory: every open returns the same one
	// servers names the servers the store's locks live on, as "KIND
	// HOST:PORT" (host as canonicalHost spells it) or "KIND PATH": two
	// stores of a Redlock that share one are not independent (see
	// sameServer).
	servers []string
	// record is where the store keeps its locks, as acquire records it in
	// a lock file and extend and release check it (see lockFile).
	record storeRecord
	// open connects to the store, giving up when ctx ends (its deadline
	// shortens the URL's dial timeout). Each call makes a new client, so
	// that check can give each worker its own connections.
	open func(ctx context.Context) (*openStore, error)
}

// openStore is a connected store with the administrative operations
// lockctl needs beyond lock.Store.
type openStore struct {
	lock.Store
	close        func()
	forceRelease func(ctx context.Context, resource string) (bool, error)
	// forceReleasePermits deletes the permits the store keeps on a
	// resource (lock.Permitter) whoever holds them, and reports whether
	// any was held; nil when the store cannot.
	forceReleasePermits func(ctx context.Context, resource string) (bool, error)
	// lastFence reads the last fence handed out for a resource; nil when
	// the store cannot tell.
	lastFence func(ctx context.Context, resource string) (uint64, bool, error)
	// permitHolders reads the holders of the permits the store keeps on a
	// resource (lock.Permitter), as lock.HolderOf their tokens; nil when
	// the store cannot tell.
	permitHolders func(ctx context.Context, resource string) ([]string, error)
	// permitLimit reads the limit that the permits on a resource were
	// taken with: from the permits the store keeps (lock.Permitter) if
	// native, else from the limit marker of a semaphore of plain locks
	// (see lock.NewSemaphore); 0 if there is none. nil when the store
	// cannot tell.
	permitLimit func(ctx context.Context, resource string, native bool) (int, error)
	// members lists, as HOST:PORT, the servers of the cluster that the
	// store reached through the seeds of its URL (a Redis Cluster's
	// nodes, an etcd cluster's members); nil when the store is one
	// server. acquire records them in the lock file, so that extend and
	// release --lock given other seeds of one cluster find its store.
	members func(ctx context.Context) ([]string, error)
}

// schemes maps each URL scheme to its parser. Each store file registers
// its own.
var schemes = map[string]func(*storeURL) (*storeSpec, error){}

// parseStore parses one --store URL.
func parseStore(raw string) (*storeSpec, error) {
	u, err := parseStoreURL(strings.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	parse := schemes[u.scheme]
	if parse == nil {
		known := make([]string, 0, len(schemes))
		for s := range schemes {
			known = append(known, s)
		}
		slices.Sort(known)
		return nil, u.bad("scheme", "%q is not a store lockctl knows: want one of %s", u.scheme, strings.Join(known, ", "))
	}
	return parse(u)
}

// storeSpecs returns the stores named by the --store flags, or else by
// $LOCKCTL_STORES (URLs separated by spaces or newlines: commas separate
// the hosts of one URL), or else fallback; without fallback, no store is a
// usage error.
func (a *app) storeSpecs(sf *storeFlags, fallback string) ([]*storeSpec, error) {
	urls, from := sf.urls, "--store"
	if len(urls) == 0 {
		urls, from = strings.Fields(a.getenv(storesEnv)), "$"+storesEnv
	}
	if len(urls) == 0 {
		if fallback == "" {
			return nil, usagef("no store: give --store URL, or set $%s", storesEnv)
		}
		urls, from = []string{fallback}, "default store"
	}
	specs := make([]*storeSpec, 0, len(urls))
	for i, raw := range urls {
		if slices.Contains(urls[:i], raw) {
			return nil, usagef("%s: the store %s is given twice", from, redact(raw))
		}
		spec, err := parseStore(raw)
		if err != nil {
			if from != "--store" {
				err = fmt.Errorf("%s: %w", from, err)
			}
			return nil, &usageError{err: err}
		}
		if other, server, ok := sameServer(specs, spec); ok {
			return nil, usagef("%s: the stores %s and %s are one server (%s): a Redlock needs independent servers; give each once", from, other.display, spec.display, server)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// sameServer returns a store of specs that shares a server with spec, and
// that server. Such a Redlock would count one server's answers as several
// (another database or key prefix on one server is another key for the
// same lock), or refuse a free lock as held by another owner when the
// stores ask one key twice, and one server's failure would cost it
// several stores.
func sameServer(specs []*storeSpec, spec *storeSpec) (*storeSpec, string, bool) {
	for _, other := range specs {
		for _, s := range spec.servers {
			if slices.Contains(other.servers, s) {
				_, server, _ := strings.Cut(s, " ")
				return other, server, true
			}
		}
	}
	return nil, "", false
}

// serverIDs returns the servers of kind at addrs, HOST:PORT or a socket's
// path, for storeSpec.servers: host names in lower case, IP addresses in
// their usual form, and localhost, 127.0.0.1 and ::1 as one host (see
// canonicalHost).
func serverIDs(kind string, addrs ...string) []string {
	ids := make([]string, len(addrs))
	for i, a := range addrs {
		if host, port, err := net.SplitHostPort(a); err == nil && !strings.HasPrefix(a, "/") {
			a = net.JoinHostPort(canonicalHost(host), port)
		}
		ids[i] = kind + " " + a
	}
	return ids
}

// canonicalHost returns one spelling of host for all that name one host
// without a lookup: a host name in lower case without its final dot, an
// IP address in its usual form (an IPv4 address mapped to IPv6 as IPv4),
// and "localhost" for localhost, 127.0.0.1 and ::1, which a server on
// loopback answers on alike (redis-server listens on both 127.0.0.1 and
// ::1 by default). Other names are not resolved: two names of one server
// are not recognised.
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		if ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback) {
			return "localhost"
		}
		return ip.String()
	}
	return host
}

// openStores opens the stores named by the flags (or else $LOCKCTL_STORES,
// or else fallback), as openStores does.
func (a *app) openStores(ctx context.Context, sf *storeFlags, fallback string, warn io.Writer) (*storeSet, error) {
	specs, err := a.storeSpecs(sf, fallback)
	if err != nil {
		return nil, err
	}
	return openStores(ctx, specs, sf, warn)
}

// storeSet is the open stores of one locker.
type storeSet struct {
	specs  []*storeSpec
	stores []*openStore
	down   []error // why each store could not be opened, or nil
	opts   lock.Options
}

// openStores connects to the stores of specs and checks the flags that
// shape their locker. With one store, failing to connect is an error. A
// Redlock goes on without the stores it cannot reach, as long as the
// others can still make a quorum; warn, if not nil, is told about them.
// Connecting gives up when ctx ends.
func openStores(ctx context.Context, specs []*storeSpec, sf *storeFlags, warn io.Writer) (*storeSet, error) {
	set := &storeSet{specs: specs, opts: lock.Options{StoreTimeout: sf.storeTimeout}}
	if err := positiveDuration("store-timeout", sf.storeTimeout); err != nil {
		return nil, err
	}
	// With one store, every quorum that parses (majority, all, 1) is the
	// store itself: a script that always passes --quorum works with one.
	q, err := parseQuorum(sf.quorum, len(specs))
	if err != nil {
		return nil, err
	}
	if len(specs) > 1 {
		set.opts.Quorum = q
	}
	ok := 0
	for _, spec := range specs {
		o, err := spec.open(ctx)
		var ue *usageError
		switch {
		case errors.As(err, &ue):
			set.Close()
			return nil, err
		case err != nil && len(specs) == 1:
			return nil, fmt.Errorf("store %s: %w", spec.name, err)
		case err != nil:
			down := &downStore{name: spec.name, err: err}
			o = &openStore{Store: down, close: func() {}}
			if spec.raises {
				// It stands for a store that fences, as the others of the
				// Redlock do: the locker goes on fencing with them.
				o.Store = &fencingDownStore{down}
			}
			o.forceRelease = func(context.Context, string) (bool, error) { return false, down.fail() }
		default:
			ok++
		}
		set.stores = append(set.stores, o)
		set.down = append(set.down, err)
	}
	if len(specs) > 1 && ok < len(specs) {
		var why []string
		for i, err := range set.down {
			if err != nil {
				why = append(why, fmt.Sprintf("store %s: %v", specs[i].name, err))
			}
		}
		if !set.opts.Quorum.Met(ok, len(specs)) {
			set.Close()
			return nil, fmt.Errorf("only %d of %d stores reachable, too few for the quorum (%v): %s", ok, len(specs), set.opts.Quorum, strings.Join(why, "; "))
		}
		if warn != nil {
			for _, w := range why {
				fmt.Fprintf(warn, "lockctl: warning: %s; going on with the %d others\n", w, ok)
			}
		}
	}
	return set, nil
}

// reopen opens the same stores again, on new connections.
func (s *storeSet) reopen(ctx context.Context, sf *storeFlags) (*storeSet, error) {
	return openStores(ctx, s.specs, sf, nil)
}

// dialBound returns d, or less if ctx ends sooner: the time left for
// connecting to a store.
func dialBound(ctx context.Context, d time.Duration) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < d {
			return max(left, time.Millisecond)
		}
	}
	return d
}

// locker returns a locker over the stores: single-store, or Redlock.
func (s *storeSet) locker(hook lock.Hook) (lock.Locker, error) {
	opts := s.opts
	opts.Hook = hook
	if len(s.stores) == 1 {
		return lock.NewSingle(s.stores[0].Store, &opts)
	}
	stores := make([]lock.Store, len(s.stores))
	for i, o := range s.stores {
		stores[i] = o.Store
	}
	return lock.NewMulti(stores, &opts)
}

// fences reports whether locks from these open stores carry a fence: one
// store that can fence, or a Redlock whose stores all fence and can raise
// their fences (lock.FenceRaiser).
func (s *storeSet) fences() bool {
	for i, spec := range s.specs {
		if !spec.fences {
			return false
		}
		if _, raises := s.stores[i].Store.(lock.FenceRaiser); !raises && len(s.specs) > 1 {
			return false
		}
	}
	return len(s.specs) > 0
}

// specsFence reports, from their URLs alone, whether locks from the stores
// of specs carry a fence: one store that fences, or a Redlock whose stores
// all fence and can raise their fences. run and elect refuse --fence-env
// with it before connecting, so that stores out of reach do not turn the
// refusal into a failure to connect.
func specsFence(specs []*storeSpec) bool {
	for _, spec := range specs {
		if !spec.fences || (len(specs) > 1 && !spec.raises) {
			return false
		}
	}
	return len(specs) > 0
}

// checkResource asks each store that validates names
// (lock.ResourceValidator) whether it takes resource, so that a name the
// stores refuse is a usage error rather than every store's failure.
func (s *storeSet) checkResource(resource string) error {
	for i, o := range s.stores {
		if v, ok := o.Store.(lock.ResourceValidator); ok {
			if err := v.ValidateResource(resource); err != nil {
				return usagef("RESOURCE refused by store %s: %w", s.specs[i].name, err)
			}
		}
	}
	return nil
}

// inProcess reports whether every store lives in lockctl's memory.
func (s *storeSet) inProcess() bool {
	for _, spec := range s.specs {
		if !spec.inProcess {
			return false
		}
	}
	return true
}

// names lists the stores for messages.
func (s *storeSet) names() string {
	names := make([]string, len(s.specs))
	for i, spec := range s.specs {
		names[i] = spec.name
	}
	return strings.Join(names, " ")
}

// Close closes every client.
func (s *storeSet) Close() {
	for _, o := range s.stores {
		o.close()
	}
}

// downStore stands for a store of a Redlock that lockctl could not reach
// when it started: every call fails, so the other stores decide.
type downStore struct {
	name string
	err  error
}

func (d *downStore) String() string { return d.name }

func (d *downStore) fail() error { return fmt.Errorf("unreachable since lockctl started: %w", d.err) }

func (d *downStore) Acquire(context.Context, string, string, time.Duration) error { return d.fail() }

// Release reports the lock not held: no call ever reached the store, so
// it cannot hold a lock of this process.
func (d *downStore) Release(context.Context, string, string) error { return lock.ErrNotHeld }

func (d *downStore) Exists(context.Context, string) (bool, error) { return false, d.fail() }

// fencingDownStore is the downStore of a store whose fences can be raised
// (lock.FenceRaiser): a Redlock over it and others that raise theirs still
// fences, its locks' fences settled on the stores that answer, as when one
// of its stores stops answering later.
type fencingDownStore struct{ *downStore }

func (d *fencingDownStore) AcquireFenced(context.Context, string, string, time.Duration) (uint64, error) {
	return 0, d.fail()
}

func (d *fencingDownStore) RaiseFence(context.Context, string, uint64) error { return d.fail() }
