package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"text/tabwriter"

	"github.com/lockkit/lock"
)

// What status tells of the permits (run -n N) and of the read-write lock
// (run --shared, --exclusive) of a resource. Both are built by package lock
// from names derived from the resource (see lock.NewSemaphore and
// lock.RWLocker): status asks about the same names.
//
//   - Permits: with one store that keeps permits (lock.Permitter: redis,
//     memory), the store's permits on the resource; otherwise plain locks on
//     RESOURCE~permit0 … RESOURCE~permit(N-1).
//   - The read-write lock: the readers are the permits of RESOURCE~read
//     (with plain locks, up to 32 slots); the writer's intent is a plain
//     lock on RESOURCE~write, which a writer takes first and holds while it
//     waits for the readers to leave.

// The suffixes of the derived names (see above).
const (
	slotSuffix   = "~permit"
	markerSuffix = "~limit" // a semaphore's limit marker, held under markerPrefix and the limit
	readSuffix   = "~read"
	writeSuffix  = "~write"
)

// markerPrefix begins the token of a semaphore's limit marker; the limit
// follows.
const markerPrefix = "lockkit-semaphore-limit-"

// slotReaders is the most readers a read-write lock over plain locks lets
// in at once (lock.RWLocker), and so its number of reader slots.
const slotReaders = 32

// holderWidth bounds the slots whose holders status asks about at once.
const holderWidth = 16

// permitStatus is what status tells of the permits of a semaphore.
type permitStatus struct {
	Limit   int      `json:"limit"`
	Held    *int     `json:"held"`
	Free    *int     `json:"free"`
	Holders []string `json:"holders"`
	Error   string   `json:"error,omitempty"`
	// TakenWith is the limit that the permits were taken with, if it is
	// not Limit: the stores keep it (see permitLimit).
	TakenWith int `json:"taken_with,omitempty"`
}

// rwStatus is what status tells of a read-write lock.
type rwStatus struct {
	Readers       *int     `json:"readers"`
	ReaderHolders []string `json:"reader_holders"`
	Writer        *string  `json:"writer"` // "none", "holds" or "waits"
	WriterHolder  *string  `json:"writer_holder"`
	Error         string   `json:"error,omitempty"`
}

// The states of a read-write lock's writer.
const (
	writerNone  = "none"
	writerHolds = "holds"
	writerWaits = "waits"
)

// held reports whether a reader or a writer holds the lock, or a writer
// waits for it.
func (rw *rwStatus) held() bool {
	return rw.Readers != nil && *rw.Readers > 0 || rw.Writer != nil && *rw.Writer != writerNone
}

// permitsOf counts the permits of a semaphore of limit on resource, and
// names their holders where the stores can tell (else Holders is nil).
func permitsOf(ctx context.Context, set *storeSet, locker lock.Locker, resource string, limit int) *permitStatus {
	p := &permitStatus{Limit: limit}
	if other := set.permitLimit(ctx, resource); other != 0 && other != limit {
		p.TakenWith = other
		p.Error = fmt.Sprintf("limit mismatch: the permits on %q were taken with -n %d, not -n %d", resource, other, limit)
		return p
	}
	held, holders, err := countPermits(ctx, set, locker, resource, limit)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	free := max(limit-held, 0)
	p.Held, p.Free, p.Holders = &held, &free, holders
	return p
}

// countPermits counts the permits of a semaphore of limit on resource,
// and reads their holders: from the store's own permits if it keeps them
// and can tell (openStore.permitHolders), else from the slots' locks.
func countPermits(ctx context.Context, set *storeSet, locker lock.Locker, resource string, limit int) (int, []string, error) {
	sem, err := lock.NewSemaphore(locker, limit)
	if err != nil {
		return 0, nil, err
	}
	held, err := sem.Permits(ctx, resource)
	if err != nil {
		return 0, nil, err
	}
	var holders []string
	switch {
	case set.keepsPermits():
		if read := set.stores[0].permitHolders; read != nil {
			holders, err = read(ctx, resource)
		}
	case held == 0:
		holders = []string{}
	default:
		holders, err = slotHolders(ctx, set, locker, resource, limit)
	}
	return held, holders, err
}

// permitLimit returns the limit that the permits on resource were taken
// with, as the first store that can tell reports it, or 0 if none can
// (the stores that cannot tell, or fail to, are passed over: the library
// still refuses a permit under another limit).
func (s *storeSet) permitLimit(ctx context.Context, resource string) int {
	native := s.keepsPermits()
	for _, o := range s.stores {
		if o.permitLimit == nil {
			continue
		}
		if n, err := o.permitLimit(ctx, resource, native); err == nil && n != 0 {
			return n
		}
	}
	return 0
}

// keepsPermits reports whether a semaphore over the set's locker uses the
// store's own permits (one store that is a lock.Permitter), as
// lock.NewSemaphore decides.
func (s *storeSet) keepsPermits() bool {
	if len(s.stores) != 1 {
		return false
	}
	_, ok := s.stores[0].Store.(lock.Permitter)
	return ok
}

// slotHolders returns the holders of the held slots of a semaphore of
// limit on resource, in slot order, or nil if the stores cannot tell.
func slotHolders(ctx context.Context, set *storeSet, locker lock.Locker, resource string, limit int) ([]string, error) {
	teller, ok := locker.(holderTeller)
	if !ok || !set.tellHolders() {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	holders := make([]*string, limit)
	var mu sync.Mutex
	var failed error // the first failure
	turns := make(chan struct{}, holderWidth)
	var wg sync.WaitGroup
	for i := range limit {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			h, held, err := teller.Holder(ctx, slotName(resource, i))
			switch {
			case err != nil:
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
				cancel()
			case held:
				holders[i] = &h
			}
		})
	}
	wg.Wait()
	switch {
	case errors.Is(failed, errors.ErrUnsupported):
		return nil, nil // a Redlock short of stores that can tell
	case failed != nil:
		return nil, failed
	}
	names := []string{}
	for _, h := range holders {
		if h != nil {
			names = append(names, *h)
		}
	}
	return names, nil
}

// slotName is the name of slot i of a semaphore of plain locks on
// resource.
func slotName(resource string, i int) string { return resource + slotSuffix + strconv.Itoa(i) }

// slotNames are the names of the slots of a semaphore of limit on
// resource.
func slotNames(resource string, limit int) []string {
	names := make([]string, limit)
	for i := range names {
		names[i] = slotName(resource, i)
	}
	return names
}

// rwStatusOf tells of the read-write lock on resource: its readers, and
// whether a writer holds it or waits for the readers to leave. The two are
// read one after the other, not at one instant.
func rwStatusOf(ctx context.Context, set *storeSet, locker lock.Locker, resource string) *rwStatus {
	rw := &rwStatus{}
	limit := slotReaders
	if set.keepsPermits() {
		limit = 1 << 16 // lock.RWLocker's bound with a Permitter; Permits does not depend on it
	}
	readers, holders, err := countPermits(ctx, set, locker, resource+readSuffix, limit)
	if err != nil {
		rw.Error = "readers: " + err.Error()
		return rw
	}
	rw.Readers, rw.ReaderHolders = &readers, holders
	intent, err := locker.IsLocked(ctx, resource+writeSuffix)
	if err != nil {
		rw.Error = "writer: " + err.Error()
		return rw
	}
	w := writerNone
	if intent {
		w = writerHolds
		if readers > 0 {
			w = writerWaits
		}
		if teller, ok := locker.(holderTeller); ok && set.tellHolders() {
			if h, held, err := teller.Holder(ctx, resource+writeSuffix); err == nil && held {
				rw.WriterHolder = &h
			}
		}
	}
	rw.Writer = &w
	return rw
}

// state is status's first line after the resource: its lock's state or,
// if the lock is free, its read-write lock's or its permits'. It says
// "free" only when all of them are known to be free.
func (rep *statusReport) state() string {
	p, rw := rep.Permits, rep.RWLock
	switch {
	case rep.Held == nil:
		return "unknown (" + rep.Error + ")"
	case *rep.Held && rep.Holder != nil && *rep.Holder != "":
		return "held by " + *rep.Holder
	case *rep.Held:
		return "held"
	case rw.Writer != nil && *rw.Writer == writerHolds:
		if rw.WriterHolder != nil && *rw.WriterHolder != "" {
			return "held --exclusive by " + *rw.WriterHolder
		}
		return "held --exclusive"
	case rw.Readers != nil && *rw.Readers > 0:
		s := "held --shared by " + count(*rw.Readers, "reader")
		if rw.Writer != nil && *rw.Writer == writerWaits { // nil: the writer could not be read
			s += "; an --exclusive writer waits"
		}
		return s
	case p != nil && p.TakenWith != 0:
		return fmt.Sprintf("permits taken with -n %d, not -n %d", p.TakenWith, p.Limit)
	case p != nil && p.Held != nil && *p.Held > 0:
		return fmt.Sprintf("%d of %d permits held", *p.Held, p.Limit)
	case rw.Error != "" || p != nil && p.Error != "":
		return "lock free; the rest unknown (below)"
	}
	return "free"
}

// printModes prints status's first lines: the state, the permits' and the
// read-write lock's counts, and a table of their holders.
func (rep *statusReport) printModes(w io.Writer) error {
	fmt.Fprintf(w, "%s: %s\n", rep.Resource, rep.state())
	var rows [][2]string // kind, holder
	add := func(kind string, holders []string) {
		for _, h := range holders {
			rows = append(rows, [2]string{kind, cmp.Or(h, "-")})
		}
	}
	switch p := rep.Permits; {
	case p == nil:
	case p.TakenWith != 0:
		fmt.Fprintf(w, "  permits: %s\n", p.Error)
	case p.Error != "":
		fmt.Fprintf(w, "  permits: unknown (%s)\n", p.Error)
	default:
		fmt.Fprintf(w, "  permits: %d of %d held, %d free%s\n", *p.Held, p.Limit, *p.Free, unnamed(*p.Held, p.Holders))
		add("permit", p.Holders)
	}
	switch rw := rep.RWLock; {
	case rw.Error != "":
		fmt.Fprintf(w, "  read-write lock: unknown (%s)\n", rw.Error)
	case rw.held():
		writer := map[string]string{
			writerNone:  "no writer",
			writerHolds: "a writer holds it",
			writerWaits: "a writer waits for the readers to leave",
		}[*rw.Writer]
		fmt.Fprintf(w, "  read-write lock: %s, %s%s\n", count(*rw.Readers, "reader"), writer, unnamed(*rw.Readers, rw.ReaderHolders))
		add("reader", rw.ReaderHolders)
		if rw.WriterHolder != nil {
			kind := "writer"
			if *rw.Writer == writerWaits {
				kind = "writer (waits)"
			}
			add(kind, []string{*rw.WriterHolder})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TAKEN AS\tHOLDER")
	for _, r := range rows {
		fmt.Fprintln(tw, "  "+r[0]+"\t"+r[1])
	}
	return tw.Flush()
}

// count is "no", "1" or n, then noun, plural but for 1.
func count(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun + "s"
	case 1:
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// unnamed notes how many of held permits have no holder in holders.
func unnamed(held int, holders []string) string {
	switch {
	case held == 0:
		return ""
	case holders == nil:
		return " (the stores cannot tell by whom)"
	case len(holders) < held:
		return fmt.Sprintf(" (%d of them by holders the stores do not agree on)", held-len(holders))
	}
	return ""
}
