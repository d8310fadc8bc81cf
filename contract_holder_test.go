package lock_test

import (
	"testing"
	"time"

	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
	"github.com/lockkit/lock/tokengen"
)

// HolderOf's doc: the part of a token after its last '~' is public, also
// in a token of one's own generator, which must keep '~' out of its
// secret; a locker with Options.Holder still reads back its holder.
func TestContractHolderOfOwnTokensWithTilde(t *testing.T) {
	ctx := t.Context()
	own := mustSingle(t, memory.New(), &lock.Options{Tokens: tokengen.Fixed("sec~ret")})
	_, err := own.TryLock(ctx, "r", time.Minute)
	wantNil(t, "TryLock(r)", err)
	if h, held, err := own.Holder(ctx, "r"); h != "ret" || !held || err != nil {
		t.Errorf(`Holder(r) held with token "sec~ret" = %q, %v, %v; want "ret", true, nil (what follows the last '~')`, h, held, err)
	}
	named := mustSingle(t, memory.New(), &lock.Options{Tokens: tokengen.Fixed("sec~ret"), Holder: "host"})
	_, err = named.TryLock(ctx, "r", time.Minute)
	wantNil(t, "TryLock(r)", err)
	if h, held, err := named.Holder(ctx, "r"); h != "host" || !held || err != nil {
		t.Errorf(`Holder(r) held with token "sec~ret" and Holder "host" = %q, %v, %v; want "host", true, nil`, h, held, err)
	}
}
