package faultkit_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/contention"
	"github.com/lockkit/lock/internal/testing/faultkit"
)

func TestReportEmitAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.txt")
	t.Setenv(faultkit.ReportEnv, path)
	a := contention.Report{Scenario: "a", FaultSuccess: math.NaN()}
	b := contention.Report{Scenario: "b", FaultSuccess: math.NaN()}
	faultkit.Emit(t, a)
	faultkit.Emit(t, b)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := a.Line() + "\n" + b.Line() + "\n"; string(data) != want {
		t.Errorf("report file = %q, want %q", data, want)
	}
}

// Positive control of the leak check: a goroutine blocked forever is
// reported, with its stack; once it ends, nothing is.
func TestLeaked(t *testing.T) {
	base := faultkit.Goroutines()
	release := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		<-release
	}()
	leaked := base.Leaked(50 * time.Millisecond)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "TestLeaked") {
		t.Errorf("Leaked = %q, want the blocked goroutine", leaked)
	}
	if got := base.Leaked(0, "TestLeaked"); len(got) != 0 {
		t.Errorf("Leaked with an ignore string matching it = %q, want none", got)
	}
	close(release)
	<-exited
	if got := base.Leaked(5 * time.Second); len(got) != 0 {
		t.Errorf("Leaked after the goroutine ended = %q", got)
	}
	// Goroutines that end late are waited for.
	done := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(done) }()
	if got := base.Leaked(5 * time.Second); len(got) != 0 {
		t.Errorf("Leaked did not wait for a goroutine ending after 20ms: %q", got)
	}
	<-done
}

func TestResidue(t *testing.T) {
	ctx := context.Background()
	left := 3
	n, err := faultkit.Residue(ctx, 5*time.Second, func(context.Context) (int, error) {
		left--
		return left, nil
	})
	if n != 0 || err != nil || left != 0 {
		t.Errorf("Residue = %d, %v after %d polls; want 0 once the keys expired", n, err, 3-left)
	}
	n, err = faultkit.Residue(ctx, 30*time.Millisecond, func(context.Context) (int, error) { return 2, nil })
	if n != 2 || err != nil {
		t.Errorf("Residue = %d, %v; want the 2 keys that never expire", n, err)
	}
	boom := errors.New("server down")
	if _, err := faultkit.Residue(ctx, 0, func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("Residue error = %v, want the counter's", err)
	}
}

// Grown counts goroutines by signature: a goroutine replaced by another
// of the same kind is not a leak; one more of a kind is.
func TestGrown(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	park := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-stop
		}()
	}
	park()
	base := faultkit.Goroutines()
	// Replace the parked goroutine by another of the same kind.
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	park()
	// The first may still be returning after its wg.Done: Grown waits
	// for it to end.
	if got := base.Grown(time.Second); len(got) != 0 {
		t.Errorf("Grown after a replacement = %q, want none", got)
	}
	if got := base.Leaked(0); len(got) != 1 {
		t.Errorf("Leaked after a replacement = %d goroutines, want the new one", len(got))
	}
	park()
	if got := base.Grown(50 * time.Millisecond); len(got) != 1 || !strings.Contains(got[0], "TestGrown") {
		t.Errorf("Grown with one more parked goroutine = %q, want it", got)
	}
	close(stop)
	wg.Wait()
	if got := base.Grown(5 * time.Second); len(got) != 0 {
		t.Errorf("Grown after every goroutine ended = %q", got)
	}
}
