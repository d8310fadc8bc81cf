package tokengen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

func ExampleRandom() {
	token, err := tokengen.Random{}.Token()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(token), "characters")
	// Output:
	// 22 characters
}

// Fixed makes every lock carry the same token, which makes a test's
// expectations easy to write. Never use it across processes: anyone with
// the token can release the lock.
func ExampleFixed() {
	locker, err := lock.NewSingle(memory.New(), &lock.Options{Tokens: tokengen.Fixed("test-token")})
	if err != nil {
		panic(err)
	}
	l, err := locker.TryLock(context.Background(), "orders/42", time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Token)
	// Output:
	// test-token
}

// Suffixed tokens are Random tokens followed by a public suffix: a locker
// with Options.Holder set makes its tokens so, and lock.HolderOf reads the
// holder back from a token.
func ExampleNewSuffixed() {
	tokens := tokengen.NewSuffixed("~worker-7")
	token, err := tokens.Token()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(token), lock.HolderOf(token))
	// Output:
	// 31 worker-7
}
