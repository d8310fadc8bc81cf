package lock

import (
	"context"
	"time"

	"github.com/lockkit/lock/internal/inproc"
)

// Hook is told what a locker does: every store call with its latency and
// outcome, quorum decisions, retries, acquisitions, extensions, releases
// and lost locks. Set it in Options.Hook; packages hooks/sloghook and
// hooks/otelhook (a nested module) adapt it to log/slog and OpenTelemetry.
//
// Observe is called synchronously on the goroutine doing the work, often
// concurrently, so it must be fast and safe for concurrent use. Its ctx
// is the context of that work: a store call ended by the end of its
// context — the caller's, or the locker's own (a wait it no longer needs,
// one that Shutdown ends) — is observed in that ended context, so that a
// hook can tell it from a store's failure. The Event
// is a value, the hook's to keep. A locker without a hook pays nothing
// for it. A MultiLocker's store that answers after the call was decided
// (the call returns once the quorum is met or cannot be) is reported when
// it answers, on another goroutine: that EventStoreCall may come after
// the call's last event. A call refused before anything is sent (bad input, a locker
// shut down, an Extend the stores cannot make) is reported by its error
// only: the hook is told nothing of it.
type Hook interface {
	Observe(ctx context.Context, e Event)
}

// SpanHook is a Hook that is also told when a Lock, TryLock, Unlock or
// Extend call begins. Begin may return a context derived from ctx (one
// carrying a trace span, say); the locker then uses it for the call's
// events and store calls, and the call's last event (EventAcquired,
// EventNotAcquired, EventReleased or EventExtended) ends it.
type SpanHook interface {
	Hook
	Begin(ctx context.Context, op, resource string) context.Context
}

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of Event, in the order they happen in a call.
const (
	// EventAttempt: an acquisition attempt starts. Attempt counts from 1.
	EventAttempt EventKind = iota + 1
	// EventStoreCall: a store answered a call (or failed to). Store,
	// StoreIndex, StoreOp, Duration and Err (nil, ErrNotAcquired,
	// ErrNotHeld, or the store's failure) describe it.
	EventStoreCall
	// EventQuorum: a multi-store attempt decided. Granted, Refused and
	// Failed count the answers it decided on; Err is nil if the quorum was
	// met.
	EventQuorum
	// EventRetry: Lock pauses before attempt Attempt+1, for at most Delay,
	// because of Err. Waiting is true when it waits for a release
	// notification rather than sleeping.
	EventRetry
	// EventAcquired: Lock or TryLock returned Lock after Attempt attempts,
	// Duration after the call began.
	EventAcquired
	// EventNotAcquired: Lock or TryLock failed with Err after Attempt
	// attempts, Duration after the call began.
	EventNotAcquired
	// EventExtended: Extend returned; Err is nil on success.
	EventExtended
	// EventReleased: Unlock returned; Err is nil on success.
	EventReleased
	// EventLost: Run found its lock lost while its function ran (Err says
	// why) and canceled the function's context, unless it had ended
	// already. A lock that MaxHold gave up and left to run out is not
	// lost: no EventLost for it.
	EventLost
)

var kindNames = [...]string{
	EventAttempt:     "attempt",
	EventStoreCall:   "store call",
	EventQuorum:      "quorum",
	EventRetry:       "retry",
	EventAcquired:    "acquired",
	EventNotAcquired: "not acquired",
	EventExtended:    "extended",
	EventReleased:    "released",
	EventLost:        "lost",
}

// String returns the kind's name, such as "store call".
func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one thing a locker did. Which fields are set depends on Kind.
type Event struct {
	Kind     EventKind
	Op       string // the locker operation: "lock", "trylock", "unlock", "extend", "islocked", "holder", "permits", and for EventLost "run", "runonce" or "campaign" (an election's term)
	Resource string
	Lock     Lock // the lock concerned, once there is one

	Store      string        // EventStoreCall: the store's name
	StoreIndex int           // EventStoreCall: its position among the locker's stores
	StoreOp    string        // EventStoreCall: "acquire", "release", "extend", "exists", "wait", "raisefence", "holder", "permits"
	Duration   time.Duration // how long the call, attempt or operation took
	Err        error

	Attempt                  int           // EventAttempt, EventRetry, EventAcquired, EventNotAcquired
	Delay                    time.Duration // EventRetry
	Waiting                  bool          // EventRetry
	Granted, Refused, Failed int           // EventQuorum
}

// observer wraps an optional Hook; its methods do nothing without one.
type observer struct {
	hook  Hook
	spans SpanHook // hook, if it is a SpanHook
}

func newObserver(h Hook) observer {
	sh, _ := h.(SpanHook)
	return observer{hook: h, spans: sh}
}

// begin tells a SpanHook that a call begins, and returns the context for
// the rest of the call.
func (o observer) begin(ctx context.Context, op, resource string) context.Context {
	if o.spans == nil {
		return ctx
	}
	return o.spans.Begin(ctx, op, resource)
}

func (o observer) on() bool { return o.hook != nil }

// start reads the clock if a hook is set, so that callers measure
// durations only when someone listens.
func (o observer) start() inproc.Instant {
	if o.hook == nil {
		return 0
	}
	return inproc.Now()
}

func (o observer) emit(ctx context.Context, e Event) {
	if o.hook != nil {
		o.hook.Observe(ctx, e)
	}
}

// attempted reports the end of a call that made one attempt, which began
// at start, took took, and returned l or e.
func (o observer) attempted(ctx context.Context, op, resource string, l Lock, start inproc.Instant, took time.Duration, e *Error) {
	if e == nil {
		o.emit(ctx, Event{Kind: EventAcquired, Op: op, Resource: resource, Lock: l, Attempt: 1, Duration: took})
		return
	}
	if start.IsZero() { // the attempt failed before it began
		start = inproc.Now()
	}
	o.emit(ctx, Event{Kind: EventNotAcquired, Op: op, Resource: resource, Attempt: 1, Duration: inproc.Since(start), Err: e})
}

// storeCall reports a store call that began at t0.
func (o observer) storeCall(ctx context.Context, op, resource string, s *storeRef, storeOp string, t0 inproc.Instant, err error) {
	if o.hook != nil {
		o.storeCallTook(ctx, op, resource, s, storeOp, inproc.Since(t0), err)
	}
}

// storeCallTook reports a store call that took d.
func (o observer) storeCallTook(ctx context.Context, op, resource string, s *storeRef, storeOp string, d time.Duration, err error) {
	if o.hook == nil {
		return
	}
	o.hook.Observe(ctx, Event{
		Kind: EventStoreCall, Op: op, Resource: resource,
		Store: s.name, StoreIndex: s.index, StoreOp: storeOp,
		Duration: d, Err: err,
	})
}
