package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockkit/lock"
)

var statusCommand = &command{
	name:         "status",
	summary:      "show who holds a lock, its permits or read-write lock, its TTL and last fence",
	usage:        "status [flags] RESOURCE",
	interspersed: true,
	doc: `Shows whether RESOURCE is held and, store by store, what the store can tell:
whether it holds it, its remaining TTL (redis, etcd, postgres, memory;
memcached cannot tell), the last fence (redis: the value of the fence
counter the resource shares with the server's other resources, or its
cluster slot's: no fence handed out for it so far is greater and the next
is greater; the holder's fence while it holds the last lock taken there;
etcd: the holder's fence while the lock is held; memcached, postgres and
memory do not tell) and who holds it (HOLDER: "HOST PID COMMAND SINCE" for
a lock that lockctl run or acquire took, the name a program gave in
lock.Options.Holder, or - if it gave none). The owner's token is never
shown.

It also shows the read-write lock that lockctl run --shared and --exclusive
take on RESOURCE, apart from its lock: how many readers hold it, whether a
writer holds it or waits for the readers to leave (new readers then wait
too), and who they are. With -n N it shows how many of the N permits that
lockctl run -n N takes on RESOURCE are held and free, and by whom (permits
are apart from the lock too). The first line says "free" only if none of
them is held. Holders are named where the stores can tell: redis names
the holders of its own permits; memory counts its permits without naming
them; the other stores, and a Redlock, keep permits and readers as locks
on derived names (RESOURCE~permitI, RESOURCE~read~permitI with I below 32,
RESOURCE~write), which status asks about one by one. If the permits were
taken with a limit other than N, status says so instead of counting them
against N (redis, alone or in a Redlock, tells that limit; with the other
stores the counts are against N).

A Redlock counts as held if any of its stores holds the resource, as the
library's IsLocked does. Exits 0 whether the resource is held or free, and
1 if the stores could not tell whether the lock is held or (with -n) how
many permits are (the stores that answered are still shown; the
read-write lock's state, when they cannot tell it, shows as unknown), and
2 if the permits were taken with a limit other than N.

With --json the output is one object:
  {"resource": "...", "held": true|false|null, "error": "..." (if null),
   "holder": "..."|null,
   "permits": {"limit": N, "held": N|null, "free": N|null,
               "holders": ["..."]|null, "error": "...",
               "taken_with": N (if not N)} (with -n only),
   "rwlock": {"readers": N|null, "reader_holders": ["..."]|null,
              "writer": "none"|"holds"|"waits"|null,
              "writer_holder": "..."|null, "error": "..."},
   "stores": [{"store": NAME, "held": true|false|null, "ttl_ms": N|null,
               "last_fence": N|null, "holder": "..."|null,
               "error": "..." (only on failure)}]}
held, holder and stores are the lock's. A store's NAME is its URL's name=
parameter, or else the URL (password hidden). ttl_ms is null when the
resource is free or the store cannot tell; last_fence is null when the
store keeps no fence for it; holder is null when the resource is free or
the stores cannot tell (a Redlock's is the holder a quorum of its stores
agree on), and "" for a lock taken without a holder name. holders and
reader_holders name one holder per permit or reader the stores can name,
and are null if they cannot tell; writer is "waits" while a writer holds
its claim but readers are still in; writer_holder is null without a
writer or if the stores cannot tell. The permits' and rwlock's error is
only on failure; taken_with is the limit the permits were taken with, if
it is not N (held, free and holders are then null).`,
	examples: `  lockctl status --store redis://localhost:6379 deploy/prod
  lockctl status --json deploy/prod | jq .held
  lockctl status -n 4 builds`,
	flags: func(fs *flag.FlagSet) func(context.Context, *app, []string) error {
		sf := addStoreFlags(fs)
		asJSON := fs.Bool("json", false, "print JSON")
		limit := 0
		fs.Func("n", "also show how many of the `N` permits of RESOURCE (run -n N) are held", func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("want a number of permits >= 1")
			}
			limit = n
			return nil
		})
		timeout := fs.Duration("timeout", 10*time.Second, "give up on the stores after this long")
		return func(ctx context.Context, a *app, args []string) error {
			if len(args) != 1 {
				return usagef("want one RESOURCE, got %d arguments", len(args))
			}
			if err := checkName("RESOURCE", args[0]); err != nil {
				return err
			}
			if err := positiveDuration("timeout", *timeout); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			return a.status(ctx, sf, args[0], limit, *asJSON)
		}
	},
}

type statusReport struct {
	Resource string        `json:"resource"`
	Held     *bool         `json:"held"`
	Error    string        `json:"error,omitempty"`
	Holder   *string       `json:"holder"`
	Permits  *permitStatus `json:"permits,omitempty"`
	RWLock   *rwStatus     `json:"rwlock"`
	Stores   []storeStatus `json:"stores"`
}

type storeStatus struct {
	Store     string  `json:"store"`
	Held      *bool   `json:"held"`
	TTLMillis *int64  `json:"ttl_ms"`
	LastFence *uint64 `json:"last_fence"`
	Holder    *string `json:"holder"`
	Error     string  `json:"error,omitempty"`
}

func (a *app) status(ctx context.Context, sf *storeFlags, resource string, limit int, asJSON bool) error {
	set, err := a.openStores(ctx, sf, "", nil)
	if err != nil {
		var ue *usageError
		if asJSON && !errors.As(err, &ue) {
			return a.unreachableStatus(sf, resource, limit, err)
		}
		return err
	}
	defer set.Close()
	if err := set.checkResource(resource); err != nil {
		return err
	}
	locker, err := set.locker(nil)
	if err != nil {
		return &usageError{err: err}
	}
	rep := statusReport{Resource: resource, Stores: make([]storeStatus, len(set.stores))}
	held, err := locker.IsLocked(ctx, resource)
	if err == nil {
		rep.Held = &held
	} else {
		rep.Error = err.Error()
	}
	if h, ok := locker.(holderTeller); ok && held {
		if holder, held, err := h.Holder(ctx, resource); err == nil && held {
			rep.Holder = &holder
		}
	}
	if limit > 0 {
		rep.Permits = permitsOf(ctx, set, locker, resource, limit)
	}
	rep.RWLock = rwStatusOf(ctx, set, locker, resource)
	for i, s := range set.stores {
		rep.Stores[i] = storeStatusOf(ctx, set.specs[i], s, resource)
	}
	if asJSON {
		if err := printJSON(a.stdout, rep); err != nil {
			return err
		}
	} else {
		if err := rep.printModes(a.stdout); err != nil {
			return err
		}
		holders := set.tellHolders()
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		header := "  STORE\tSTATE\tTTL\tLAST FENCE"
		if holders {
			header += "\tHOLDER"
		}
		fmt.Fprintln(tw, header)
		for _, st := range rep.Stores {
			fmt.Fprintln(tw, "  "+strings.Join(st.cells(holders), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// -n N other than the permits' limit is a mistake in the command line.
	if rep.Permits != nil && rep.Permits.TakenWith != 0 {
		return exitWith(exitUsage, errors.New(rep.Permits.Error))
	}
	// The read-write lock, which status reads unasked, shows its error
	// without failing a status that could tell the rest.
	if rep.Held == nil || rep.Permits != nil && rep.Permits.Error != "" {
		return exitWith(exitFailure, nil)
	}
	return nil
}

// unreachableStatus prints the JSON report of stores that could not be
// opened (a lone store, or too many of a Redlock's), so that scripts get
// the one object that --json promises, with held null and the error, and
// exits with status 1.
func (a *app) unreachableStatus(sf *storeFlags, resource string, limit int, err error) error {
	rep := statusReport{Resource: resource, Error: err.Error(), RWLock: &rwStatus{Error: err.Error()}}
	if limit > 0 {
		rep.Permits = &permitStatus{Limit: limit, Error: err.Error()}
	}
	if specs, serr := a.storeSpecs(sf, ""); serr == nil {
		why := err.Error()
		if len(specs) > 1 {
			why = "not asked: too few of the stores could be reached (see error)"
		}
		for _, spec := range specs {
			rep.Stores = append(rep.Stores, storeStatus{Store: spec.name, Error: why})
		}
	}
	if jerr := printJSON(a.stdout, rep); jerr != nil {
		return jerr
	}
	return exitWith(exitFailure, err)
}

// storeStatusOf asks one store about resource.
func storeStatusOf(ctx context.Context, spec *storeSpec, s *openStore, resource string) storeStatus {
	st := storeStatus{Store: spec.name}
	var held bool
	var err error
	if r, ok := s.Store.(lock.TTLReader); ok {
		var ttl time.Duration
		ttl, held, err = r.TTL(ctx, resource)
		if err == nil && held {
			ms := ttl.Milliseconds()
			st.TTLMillis = &ms
		}
	} else {
		held, err = s.Exists(ctx, resource)
	}
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Held = &held
	if r, ok := s.Store.(lock.HolderReader); ok && held {
		holder, held, err := r.Holder(ctx, resource)
		switch {
		case err != nil:
			st.Error = "reading the holder: " + err.Error()
		case held:
			st.Holder = &holder
		}
	}
	if s.lastFence != nil {
		f, ok, err := s.lastFence(ctx, resource)
		switch {
		case err != nil:
			st.Error = "reading the last fence: " + err.Error()
		case ok:
			st.LastFence = &f
		}
	}
	return st
}

// cells renders a store's status as the cells of its row: store, state,
// TTL, last fence, the holder (with holders), and the error if there was
// one.
func (st storeStatus) cells(holders bool) []string {
	row := []string{st.Store, "unknown", "-", "-"}
	switch {
	case st.Held == nil:
	case *st.Held:
		row[1], row[2] = "held", "unknown" // the store cannot tell
		if st.TTLMillis != nil {
			row[2] = (time.Duration(*st.TTLMillis) * time.Millisecond).String()
		}
	default:
		row[1] = "free"
	}
	if st.LastFence != nil {
		row[3] = strconv.FormatUint(*st.LastFence, 10)
	}
	if holders {
		holder := "-"
		if st.Holder != nil && *st.Holder != "" {
			holder = *st.Holder
		}
		row = append(row, holder)
	}
	if st.Error != "" {
		row = append(row, "error: "+st.Error)
	}
	return row
}

// holderTeller is a locker that can tell who holds a resource: both of
// package lock's.
type holderTeller interface {
	Holder(ctx context.Context, resource string) (holder string, held bool, err error)
}

// tellHolders reports whether any of the stores can tell who holds a
// lock (lock.HolderReader): status then shows a HOLDER column.
func (s *storeSet) tellHolders() bool {
	for _, o := range s.stores {
		if _, ok := o.Store.(lock.HolderReader); ok {
			return true
		}
	}
	return false
}
