package lock_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/internal/testing/pgtest"
	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/stores/redis"
)

// Bad input is refused with ErrInvalid, runs nothing and records nothing:
// a nil write would otherwise panic with the key's fence already raised.
func TestFenceGuardRefusesBadInput(t *testing.T) {
	var g lock.FenceGuard
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Do(k, 5, nil) panicked: %v; want an error matching ErrInvalid", p)
			}
		}()
		err = g.Do("k", 5, nil)
	}()
	wantIs(t, "Do(k, 5, nil)", err, lock.ErrInvalid)
	wrote := false
	wantIs(t, "Do(k, 0, write)", g.Do("k", 0, func() error { wrote = true; return nil }), lock.ErrInvalid)
	if wrote {
		t.Error("Do(k, 0, write) ran write; want it refused before")
	}
	wantNil(t, "Do(k, 1, write) after refused calls with fences 5 and 0", g.Do("k", 1, func() error { return nil }))
}

// As documented: a fence equal to the highest writes (the same holder
// writes again), a lower one is refused with an error naming the key and
// both fences, and keys are independent of one another.
func TestFenceGuardContract(t *testing.T) {
	var g lock.FenceGuard
	nop := func() error { return nil }
	wantNil(t, "Do(a, 7)", g.Do("a", 7, nop))
	wantNil(t, "Do(a, 7) again", g.Do("a", 7, nop))
	err := g.Do("a", 6, nop)
	wantIs(t, "Do(a, 6) after 7", err, lock.ErrStaleFence)
	if err != nil && (!strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "6") || !strings.Contains(err.Error(), "7")) {
		t.Errorf("Do(a, 6) after 7 = %q; want the key and both fences named", err)
	}
	if errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Do(a, 6) after 7 = %v; want ErrStaleFence only, not ErrInvalid", err)
	}
	wantNil(t, "Do(b, 1): a key of its own", g.Do("b", 1, nop))
	wantNil(t, "Do(\"\", 1): the empty key is a key", g.Do("", 1, nop))
	wantNil(t, "Do(a, max uint64)", g.Do("a", ^uint64(0), nop))
	wantIs(t, "Do(a, max-1) after max", g.Do("a", ^uint64(0)-1, nop), lock.ErrStaleFence)
}

// Concurrent writers on one key: the writes that ran ran one at a time,
// in non-decreasing fence order, and every refused fence was below one
// that had written.
func TestFenceGuardConcurrent(t *testing.T) {
	var g lock.FenceGuard
	var (
		mu      sync.Mutex
		ran     []uint64
		refused []uint64
		inside  int
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				fence := uint64(1 + (i*7+w*13)%50)
				err := g.Do("k", fence, func() error {
					mu.Lock()
					inside++
					if inside != 1 {
						t.Errorf("%d writes to one key ran at once; want 1", inside)
					}
					ran = append(ran, fence)
					inside--
					mu.Unlock()
					return nil
				})
				switch {
				case errors.Is(err, lock.ErrStaleFence):
					mu.Lock()
					refused = append(refused, fence)
					mu.Unlock()
				case err != nil:
					t.Errorf("Do(k, %d) = %v; want nil or ErrStaleFence", fence, err)
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(ran); i++ {
		if ran[i] < ran[i-1] {
			t.Fatalf("write with fence %d ran after one with fence %d; want non-decreasing fences", ran[i], ran[i-1])
		}
	}
	highest := ran[len(ran)-1]
	for _, f := range refused {
		if f >= highest {
			t.Errorf("Do(k, %d) = ErrStaleFence, but no higher fence than %d wrote; want it refused only below a written fence", f, highest)
		}
	}
}

// The Redis fence check of docs/fencing.md, as written there, against a
// real server and the fences of the Redis store: the later holder's
// write lands, the earlier holder's is refused, and the same fence writes
// again.
func TestFencingDocRedisScript(t *testing.T) {
	doc, err := os.ReadFile("docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```lua\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/fencing.md has no ```lua block")
	}
	srv := redistest.Start(t)
	client := srv.NewClient(t)
	store, err := redis.New(client)
	if err != nil {
		t.Fatal(err)
	}
	locker, err := lock.NewSingle(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first, err := locker.TryLock(ctx, "account/42", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The first holder is paused while its lock ends (released here);
	// the next holder's fence is higher.
	if err := locker.Unlock(ctx, first); err != nil {
		t.Fatal(err)
	}
	second, err := locker.TryLock(ctx, "account/42", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fence <= first.Fence {
		t.Fatalf("fences %d then %d; want them to increase", first.Fence, second.Fence)
	}
	write := func(value string, fence uint64) int64 {
		t.Helper()
		n, err := rueidis.NewLuaScript(script).Exec(ctx, client, []string{"balance", "balance:fence"}, []string{value, strconv.FormatUint(fence, 10)}).AsInt64()
		if err != nil {
			t.Fatalf("the doc's script: %v", err)
		}
		return n
	}
	if n := write("new", second.Fence); n != 1 {
		t.Errorf("write with the later fence %d = %d; want 1", second.Fence, n)
	}
	if n := write("stale", first.Fence); n != 0 {
		t.Errorf("write with the earlier fence %d = %d; want 0", first.Fence, n)
	}
	if n := write("again", second.Fence); n != 1 {
		t.Errorf("write with the same fence %d again = %d; want 1", second.Fence, n)
	}
	if v, err := client.Do(ctx, client.B().Get().Key("balance").Build()).ToString(); err != nil || v != "again" {
		t.Errorf("balance = %q, %v; want the last accepted write, \"again\"", v, err)
	}
}

// The SQL fence check of docs/fencing.md (and of FenceGuard's doc and the
// README), as written there, against a real PostgreSQL: a write with a
// higher fence lands, a lower one matches no row, the same fence writes
// again.
func TestFencingDocSQL(t *testing.T) {
	doc, err := os.ReadFile("docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```sql\n")
	statement, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/fencing.md has no ```sql block")
	}
	statement = strings.TrimSpace(statement)
	srv := pgtest.Start(t)
	out, err := srv.Psql(t.Context(), "", `
CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL, fence bigint NOT NULL DEFAULT 0);
INSERT INTO accounts VALUES (42, 0, 0);
PREPARE write(int, bigint, int) AS `+statement+`;
EXECUTE write(100, 7, 42);
EXECUTE write(50, 5, 42);
SELECT balance || ' ' || fence FROM accounts WHERE id = 42;
EXECUTE write(70, 7, 42);
SELECT balance || ' ' || fence FROM accounts WHERE id = 42;`)
	if err != nil {
		t.Fatalf("the doc's statement: %v: %s", err, out)
	}
	if want := "100 7\n70 7"; out != want {
		t.Errorf("balance and fence after writes with fences 7, 5 (stale), then 7 again: %q; want %q", out, want)
	}
}
