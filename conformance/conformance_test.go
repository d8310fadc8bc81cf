package conformance_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/conformance"
	"github.com/lockkit/lock/stores/memory"
)

// The kit must fail stores that break the contract. Each broken store
// below wraps the memory store and breaks one rule; TestBrokenStoresFail
// runs the suite on each in a child process and checks that it fails with
// a message naming the broken rule.

// releaseWithoutTokenCheck deletes whatever holds the resource.
type releaseWithoutTokenCheck struct{ *memory.Store }

func (s releaseWithoutTokenCheck) Release(ctx context.Context, resource, token string) error {
	if s.Expire(resource) {
		return nil
	}
	return lock.ErrNotHeld
}

// overwriteHeld takes a resource even when someone holds it.
type overwriteHeld struct{ *memory.Store }

func (s overwriteHeld) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	s.Expire(resource)
	return s.Store.Acquire(ctx, resource, token, ttl)
}

// extendAfterExpiry re-creates an expired lock when asked to extend it.
type extendAfterExpiry struct{ *memory.Store }

func (s extendAfterExpiry) Extend(ctx context.Context, resource, token string, ttl time.Duration) error {
	err := s.Store.Extend(ctx, resource, token, ttl)
	if errors.Is(err, lock.ErrNotHeld) {
		return s.Store.Acquire(ctx, resource, token, ttl)
	}
	return err
}

// contentionOnTimeout reports every failure, a dead context included, as
// contention.
type contentionOnTimeout struct{ *memory.Store }

func (s contentionOnTimeout) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	if err := s.Store.Acquire(ctx, resource, token, ttl); err != nil {
		return lock.ErrNotAcquired
	}
	return nil
}

// ignoresTTL keeps locks a thousand times longer than asked.
type ignoresTTL struct{ *memory.Store }

func (s ignoresTTL) Acquire(ctx context.Context, resource, token string, ttl time.Duration) error {
	return s.Store.Acquire(ctx, resource, token, 1000*ttl)
}

// startAnswersTwice calls done twice for every call started with Start.
type startAnswersTwice struct{ *memory.Store }

func (s startAnswersTwice) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	fence, err := c.Run(ctx, s.Store)
	done(fence, err)
	done(fence, err)
}

// startIgnoresHolder grants every acquisition started with Start.
type startIgnoresHolder struct{ *memory.Store }

func (s startIgnoresHolder) Start(ctx context.Context, c lock.Call, done func(uint64, error)) {
	fence, err := c.Run(ctx, s.Store)
	if c.Op == lock.CallAcquire && errors.Is(err, lock.ErrNotAcquired) {
		err = nil
	}
	done(fence, err)
}

var broken = map[string]struct {
	store       func() lock.Store
	rule, wants string
}{
	"release-without-token-check": {
		func() lock.Store { return releaseWithoutTokenCheck{memory.New()} },
		"ReleaseWrongToken", "Release(r, wrongToken) = nil; want ErrNotHeld",
	},
	"overwrite-held": {
		func() lock.Store { return overwriteHeld{memory.New()} },
		"AcquireHeld", "Acquire(r, b) while a holds r = nil; want ErrNotAcquired",
	},
	"extend-after-expiry": {
		func() lock.Store { return extendAfterExpiry{memory.New()} },
		"ExtendAfterExpiry", "Extend(r, a) after r expired = nil; want ErrNotHeld",
	},
	"contention-on-timeout": {
		func() lock.Store { return contentionOnTimeout{memory.New()} },
		"CanceledContext", "Acquire(held, a) with a canceled context = lock: not acquired: held by another owner; want context.Canceled, not ErrNotAcquired",
	},
	"start-answers-twice": {
		func() lock.Store { return startAnswersTwice{memory.New()} },
		"StartOutcomes", "called done 2 times; want exactly once",
	},
	"start-ignores-holder": {
		func() lock.Store { return startIgnoresHolder{memory.New()} },
		"StartOutcomes", "Start(acquire r, b) while a holds r = nil; want ErrNotAcquired",
	},
	"ignores-ttl": {
		func() lock.Store { return ignoresTTL{memory.New()} },
		"Expiry", "want false: the lock did not expire",
	},
}

const brokenEnv = "LOCKKIT_CONFORMANCE_BROKEN_STORE"

// TestBrokenStoreChild is the child half of TestBrokenStoresFail.
func TestBrokenStoreChild(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestBrokenStoresFail")
	}
	b := broken[name]
	conformance.TestStore(t, func(t *testing.T) lock.Store { return b.store() }, &conformance.Options{Synctest: true})
}

func TestBrokenStoresFail(t *testing.T) {
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBrokenStoreChild$", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("conformance suite on a %s store: err = %v; want a failing exit\n%s", name, err, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenStoreChild/"+b.rule+" ") {
				t.Errorf("conformance suite on a %s store did not fail rule %s\n%s", name, b.rule, out)
			}
			if !strings.Contains(string(out), b.wants) {
				t.Errorf("conformance suite on a %s store: output lacks %q\n%s", name, b.wants, out)
			}
		})
	}
}

func TestMemoryStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return memory.New() }, &conformance.Options{Synctest: true})
}

// A store without optional capabilities: the capability rules skip.
type basicOnly struct{ s *memory.Store }

func (b basicOnly) Acquire(ctx context.Context, r, tok string, ttl time.Duration) error {
	return b.s.Acquire(ctx, r, tok, ttl)
}
func (b basicOnly) Release(ctx context.Context, r, tok string) error { return b.s.Release(ctx, r, tok) }
func (b basicOnly) Exists(ctx context.Context, r string) (bool, error) {
	return b.s.Exists(ctx, r)
}

func TestBasicStorePasses(t *testing.T) {
	conformance.TestStore(t, func(t *testing.T) lock.Store { return basicOnly{memory.New()} }, &conformance.Options{Synctest: true})
}
