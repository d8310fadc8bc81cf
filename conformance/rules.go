package conformance

import (
	"testing"

	"github.com/lockkit/lock"
)

// rule is one subtest of the suite.
type rule struct {
	name  string
	why   string                  // what goes wrong for users when a store breaks the rule
	needs func(h *harness) string // what the store or the options lack for the rule, or ""
	run   func(t *testing.T, h *harness)
}

var rules = []rule{
	{name: "AcquireFree", run: acquireFree,
		why: "Acquire must take a free resource, or no one ever gets the lock"},
	{name: "AcquireHeld", run: acquireHeld,
		why: "a held resource must refuse every other owner and stay with its holder, or two owners hold one lock"},
	{name: "AcquireHeldBySelf", run: acquireHeldBySelf,
		why: "locks are not re-entrant: an Acquire by the holder itself must fail too, or a retried acquisition succeeds twice"},
	{name: "AcquireHeldKeepsExpiry", run: acquireHeldKeepsExpiry,
		why: "a refused Acquire, the holder's own too, must leave the holder's expiry alone: a store that sets it anyway (SETNX, then EXPIRE) lets any contender shorten the holder's lock, or stretch it past its holder's death"},
	{name: "ReleaseOwner", run: releaseOwner,
		why: "Release by the holder must free the resource at once, or everyone waits for the TTL"},
	{name: "ReleaseWrongToken", run: releaseWrongToken,
		why: "only the holder's token may release: otherwise a holder whose lock expired frees its successor's"},
	{name: "ReleaseTwice", run: releaseTwice,
		why: "a second Release must report ErrNotHeld: the lockers tell a lost lock by it"},
	{name: "ReleaseNeverHeld", run: releaseNeverHeld,
		why: "releasing a free resource must report ErrNotHeld, not succeed"},
	{name: "ReleaseAfterExpiry", run: releaseAfterExpiry,
		why: "a release after expiry must report ErrNotHeld, so the holder learns it had lost the lock"},
	{name: "ReleaseAfterTakeover", run: releaseAfterTakeover,
		why: "a late release by the previous holder must not free the new holder's lock"},
	{name: "LongTokens", run: longTokens,
		why: "tokens are compared whole: two owners whose long tokens share all but their last byte must not release or extend each other's locks"},
	{name: "LookalikeTokens", run: lookalikeTokens,
		why: "tokens are compared byte for byte: a store that compares them as text, ignoring case or trailing spaces as SQL collations may, lets one owner release or extend another's lock"},
	{name: "Expiry", run: expiry,
		why: "a lock must last its TTL (less the granularity) and end soon after it: early expiry gives two holders, late expiry blocks everyone"},
	{name: "AcquireNearExpiry", run: acquireNearExpiry,
		why: "a held lock must refuse every other owner until its TTL (less the granularity) has run out, in its last moments too: a store that lets a contender take over a lock about to expire gives two owners the lock while the first still counts on it"},
	{name: "LongTTL", run: longTTL,
		why: "every call that sets a TTL must honour a TTL of several seconds, fractions of a second included: a store that caps TTLs, truncates them to whole seconds or expires locks early gives a second owner the lock while the first still counts on it"},
	{name: "MaxTTL", needs: ttlReader, run: maxTTL,
		why: "every call that sets a TTL must keep lock.MaxTTL, the longest a locker asks for, or refuse it (ErrInvalid): a store that caps long TTLs, or reads a long one as something else (memcached takes more than 30 days as a date), frees a lock its holder counts on"},
	{name: "IndependentResources", run: independentResources,
		why: "locks on different resources must not affect each other"},
	{name: "UnusualResourceNames", run: unusualResourceNames,
		why: "different names are different locks: a store that folds case, trims white space or truncates long names makes two resources exclude each other, or frees one with the other's release; a name the store cannot keep apart from others it must refuse through lock.ResourceValidator"},
	{name: "Contention", run: contention,
		why: "of concurrent Acquires of a free resource exactly one must win: this is mutual exclusion"},
	{name: "CanceledContext", run: canceledContext,
		why: "a call whose context is canceled must report the context's error, never ErrNotAcquired or ErrNotHeld: the lockers clean up by token only after an error they cannot read as an outcome"},
	{name: "ExpiredDeadline", run: expiredDeadline,
		why: "a call whose deadline has passed must report context.DeadlineExceeded, never an outcome it did not observe"},
	{name: "DeadlineInFlight", run: deadlineInFlight,
		why: "a call whose deadline passes while it is in flight cannot know its outcome and must report an error of its own (the context's or the transport's), never ErrNotAcquired or ErrNotHeld: the lockers clean up by token only after such an error, and a store that reports a refusal for an Acquire it applied leaves the lock held, by a token nobody has, for its whole TTL"},

	{name: "ExtendOwner", needs: extender, run: extendOwner,
		why: "Extend by the holder must keep the lock for the new TTL, or lock.Run loses locks it renewed"},
	{name: "ExtendShortens", needs: extender, run: extendShortens,
		why: "Extend sets the TTL from now, a shorter one too: a store that only ever lengthens keeps locks longer than their holders asked"},
	{name: "ExtendWrongToken", needs: extender, run: extendWrongToken,
		why: "only the holder's token may extend a lock"},
	{name: "ExtendAfterExpiry", needs: extender, run: extendAfterExpiry,
		why: "Extend must not re-create an expired lock: its holder must learn that it lost the lock, as someone else may have held it meanwhile"},
	{name: "ExtendAfterTakeover", needs: extender, run: extendAfterTakeover,
		why: "Extend by a previous holder must not touch the new holder's lock"},

	{name: "TTL", needs: ttlReader, run: ttlQuery,
		why: "TTL must tell how long a lock has left, neither much less nor more, and say free once it is released or expired: operators and tools act on it"},
	{name: "Holder", needs: holderReader, run: holderQuery,
		why: "Holder must tell who holds a lock, the public part of its token only, and say free once it is released or expired: operators act on it, and a store that reveals the secret lets anyone who reads it release the lock"},

	{name: "FencingIncreases", needs: fencer, run: fencingIncreases,
		why: "fences must grow strictly across releases and expiry, or a protected resource accepts the write of a holder whose lock expired"},
	{name: "FencingAcrossRestart", needs: all(fencer, restartable), run: fencingAcrossRestart,
		why: "a fence after a restart of the server must exceed every fence before it: the holders of the locks a restart lost still write with their fences"},
	{name: "FenceOrder", needs: fencer, run: fenceOrder,
		why: "fences must follow the order in which holders take the lock: a fence drawn apart from the lock lets a later holder carry a smaller fence, and its writes are refused"},
	{name: "FencedLock", needs: fencer, run: fencedLock,
		why: "a lock taken with AcquireFenced is the lock Acquire takes: Exists, TTL, Holder and Extend must see it while it is held, and they and WaitRelease must see the resource free once it is released, or a store that keeps its fences with the lock reads the record a release leaves as a lock, and every waiter and tool waits for a lock nobody holds"},
	{name: "RaiseFence", needs: fenceRaiser, run: raiseFence,
		why: "after RaiseFence(r, F) every fence of r must exceed F and the lock must be as it was: a MultiLocker relies on it to give a lock held in several stores one fence that every later lock exceeds"},
	{name: "RaiseFenceLeavesLock", needs: fenceRaiser, run: raiseFenceLeavesLock,
		why: "RaiseFence changes fences only: a held lock must keep its TTL, neither refreshed, made to last for good, nor cut, and a free resource must stay free; a MultiLocker raises fences of locks it holds, and a raise that rewrites the lock keeps a dead holder's lock for good"},
	{name: "RaiseFenceNearMax", needs: fenceRaiser, run: raiseFenceNearMax,
		why: "a raise to near 2^64 must be refused (ErrInvalid) or be followed by greater fences only: a counter that wraps around to 0 hands out fences below every earlier one"},

	{name: "WaitFree", needs: waiter, run: waitFree,
		why: "WaitRelease of a free resource must return at once"},
	{name: "WaitWakesOnRelease", needs: waiter, run: waitWakesOnRelease,
		why: "WaitRelease must block while the resource is held and return on its release: a wait that returns early makes every waiting Lock spin, one that misses the release makes it sleep to the TTL"},
	{name: "WaitIgnoresOtherResources", needs: waiter, run: waitIgnoresOtherResources,
		why: "WaitRelease(r) must not return for the release of another resource: every waiter would wake and retry on every release"},
	{name: "WaitIgnoresExtend", needs: all(waiter, extender), run: waitIgnoresExtend,
		why: "WaitRelease must not return when the holder extends its lock, which is still held: every waiter would wake and retry at each renewal of the lock"},
	{name: "WaitWakesOnExpiry", needs: waiter, run: waitWakesOnExpiry,
		why: "WaitRelease must return when the lock expires, or waiters sleep past the death of a holder that never released"},
	{name: "WaitFreeAfterExpiry", needs: waiter, run: waitAfterGone,
		why: "WaitRelease that begins once the lock was released, or expired without a release, must return at once: a store that hears of a lock's end only as it happens leaves every waiter that comes later sleeping until its context ends"},
	{name: "WaitHonoursContext", needs: waiter, run: waitHonoursContext,
		why: "WaitRelease must return when its context ends, or a Lock outlives its caller's deadline"},
	{name: "WaitReleaseRace", needs: waiter, run: waitReleaseRace,
		why: "a release at the moment WaitRelease begins must not be missed, or the waiter sleeps until the TTL runs out"},

	{name: "QueueFree", needs: queuer, run: queueFree,
		why: "AcquireQueued of a free resource must take it at once, as Acquire (or AcquireFenced) would, without getting in line: a SingleLocker's Lock makes its attempts with it"},
	{name: "QueueNilQueued", needs: queuer, run: queueNilQueued,
		why: "Queued is called only if set: an acquisition without one must get in line and be handed the lock as any other, not panic on a nil function"},
	{name: "QueueNoWait", needs: queuer, run: queueNoWait,
		why: "AcquireQueued with a wait of 0 or less is one attempt: it must return ErrNotAcquired at once while the resource is held and never get in line, or a caller that asked not to wait blocks, or is handed a lock it no longer waits for"},
	{name: "QueueHandoff", needs: queuer, run: queueHandoff,
		why: "a queued acquisition must wait while the resource is held and hold the lock, under its own token, when it returns after the release: a waiter that returns without the lock believes it holds what anyone may take"},
	{name: "QueueNoBarging", needs: queuer, run: queueNoBarging,
		why: "a release must hand the lock to the first in line itself: if a caller that asks after the release can take the lock first, waiters are passed over by newcomers, without bound"},
	{name: "QueueOrder", needs: queuer, run: queueOrder,
		why: "queued acquisitions must be handed the lock in the order they got in line, one per release: otherwise a caller waits while later ones pass it"},
	{name: "QueueWaitRunsOut", needs: queuer, run: queueWaitRunsOut,
		why: "a queued acquisition whose wait runs out must wait that long, return ErrNotAcquired and leave the line: a store that ignores the wait blocks its caller past it, and a lock handed to a caller that has left stays held until its TTL runs out"},
	{name: "QueueAfterExpiry", needs: queuer, run: queueAfterExpiry,
		why: "a lock that expires instead of being released must be handed to the first in line, with its TTL counted from the handoff: otherwise waiters sleep past the death of a holder that never released, or are handed a lock about to expire"},
	{name: "QueueHonoursContext", needs: queuer, run: queueHonoursContext,
		why: "a queued acquisition must return its context's error when the context ends, and a release by its token must leave nothing held: otherwise a Lock outlives its caller's deadline, or the lock goes to a caller that has left and stays held until its TTL runs out"},
	{name: "QueueFencesIncrease", needs: all(queuer, fencer), run: queueFencesIncrease,
		why: "a lock handed over in line, on a release or on expiry, must carry a fence greater than its previous holder's, or a protected resource accepts the writes of a holder whose lock is gone"},

	{name: "ReleaseRacesExpiry", run: releaseRacesExpiry,
		why: "a release racing the lock's expiry and a new owner's Acquire must not delete the new owner's lock: the token check and the delete must be one step"},
	{name: "ExtendRacesExpiry", needs: extender, run: extendRacesExpiry,
		why: "an Extend racing the lock's expiry and a new owner's Acquire must not set the new owner's TTL: the token check and the new expiry must be one step, or the new owner's lock expires early and a third owner takes it while the second still counts on it"},

	{name: "StartOutcomes", needs: starter, run: startOutcomes,
		why: "calls made through Start must have the outcomes of the blocking methods: a MultiLocker makes its calls through Start"},
	{name: "StartUnknownCall", needs: starter, run: startUnknownCall,
		why: "a call Start does not know must be answered, once, with the error lock.Call.Run gives it (matching lock.ErrInvalid), and change nothing: a store that drops it leaves its caller waiting, one that reports success lies"},
	{name: "StartFenced", needs: all(starter, fencer), run: startFenced,
		why: "fenced acquisitions made through Start must answer the fences AcquireFenced would, strictly increasing with them"},
	{name: "StartRaiseFence", needs: all(starter, fenceRaiser), run: startRaiseFence,
		why: "RaiseFence made through Start must raise the next fences as RaiseFence does"},
	{name: "StartCanceledContext", needs: starter, run: startCanceled,
		why: "a call started with a canceled context must report the context's error, never an outcome"},
	{name: "StartExpiredDeadline", needs: starter, run: startExpiredDeadline,
		why: "a call started with an expired deadline must report context.DeadlineExceeded: Start must honour deadlines, not only cancellation"},
	{name: "StartOwnDeadline", needs: starter, run: startOwnDeadline,
		why: "each started call must be answered by its own deadline, and one its deadline cuts short with an error of its own (the context's or the transport's), never ErrNotAcquired: callers with short deadlines must not make callers with long ones fail, and the lockers clean up by token only after an error they cannot read as an outcome"},
	{name: "StartConcurrent", needs: starter, run: startConcurrent,
		why: "calls started by many goroutines at once must each get exactly one answer, with one winner per resource"},

	{name: "SingleLocker", run: singleLocker,
		why: "a SingleLocker over the store must keep workers out of each other's critical sections"},
	{name: "MultiLocker", run: multiLocker,
		why: "a MultiLocker over three such stores must keep workers out of each other's critical sections"},
}

// The requirements of the rules that need an optional capability.
var (
	extender     = needs[lock.Extender]("lock.Extender")
	ttlReader    = needs[lock.TTLReader]("lock.TTLReader")
	holderReader = needs[lock.HolderReader]("lock.HolderReader")
	fencer       = needs[lock.Fencer]("lock.Fencer")
	fenceRaiser  = needs[lock.FenceRaiser]("lock.FenceRaiser")
	waiter       = needs[lock.Waiter]("lock.Waiter")
	queuer       = needs[lock.Queuer]("lock.Queuer")
	starter      = needs[lock.Starter]("lock.Starter")
)

// needs returns the requirement that the store implement C, named name.
func needs[C any](name string) func(h *harness) string {
	return func(h *harness) string {
		if _, ok := h.store.(C); ok {
			return ""
		}
		return "store does not implement " + name
	}
}

// restartable requires Options.Restart.
func restartable(h *harness) string {
	if h.opts.Restart == nil {
		return "Options.Restart is not set"
	}
	return ""
}

// all requires every one of reqs.
func all(reqs ...func(h *harness) string) func(h *harness) string {
	return func(h *harness) string {
		for _, r := range reqs {
			if missing := r(h); missing != "" {
				return missing
			}
		}
		return ""
	}
}
