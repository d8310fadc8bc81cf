package gocronlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/lockkit/lock"
	gocronlock "github.com/lockkit/lock/adapters/gocron"
	"github.com/lockkit/lock/stores/memory"
)

// Two replicas schedule the same job; while one runs it, the other skips
// its run.
func ExampleLocker() {
	store := memory.New() // one store shared by every replica
	started, skipped := make(chan struct{}), make(chan struct{})
	replica := func(name string) gocron.Scheduler {
		locker, _ := lock.NewSingle(store, nil)
		jobs, _ := gocronlock.NewLocker(locker, 30*time.Second)
		s, _ := gocron.NewScheduler(gocron.WithDistributedLocker(jobs))
		_, _ = s.NewJob(
			gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
			gocron.NewTask(func() {
				fmt.Println(name, "builds the report")
				close(started)
				<-skipped // still running while the other replica tries
			}),
			gocron.WithName("nightly-report"),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, job string, err error) {
				fmt.Printf("%s skips %s: %v\n", name, job, err)
				close(skipped)
			})),
		)
		return s
	}
	a, b := replica("a"), replica("b")
	a.Start()
	<-started
	b.Start()
	<-skipped
	_ = b.Shutdown()
	_ = a.Shutdown()
	// Output:
	// a builds the report
	// b skips nightly-report: runonce "nightly-report": skipped: another caller runs the job or ran it within its minimum interval
}

// The replica that leads runs the scheduler's jobs; the others skip them.
func ExampleElector() {
	store := memory.New()
	locker, _ := lock.NewSingle(store, nil)
	elector, _ := gocronlock.NewElector(locker, "scheduler", 30*time.Second)
	done := make(chan struct{})
	s, _ := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	_, _ = s.NewJob(
		gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() {
			t, _ := elector.Term()
			fmt.Println("leader runs the job, fence", t.Fence())
			close(done)
		}),
	)
	s.Start()
	<-done
	_ = s.Shutdown()
	fmt.Println(elector.Close(context.Background()))
	// Output:
	// leader runs the job, fence 1
	// <nil>
}
