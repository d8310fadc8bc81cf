package memory_test

import (
	"testing"

	"github.com/lockkit/lock/stores/memory"
)

// An Op names its operations, so that a Fault prints readably.
func TestOpString(t *testing.T) {
	for _, c := range []struct {
		op   memory.Op
		want string
	}{
		{0, "0"},
		{memory.OpAcquire, "acquire"},
		{memory.OpAcquire | memory.OpRelease, "acquire|release"},
		{memory.OpWait | memory.OpRaiseFence, "wait|raisefence"},
		{memory.OpExtend | 0x80, "extend|Op(0x80)"},
	} {
		if got := c.op.String(); got != c.want {
			t.Errorf("Op(%#x).String() = %q; want %q", uint8(c.op), got, c.want)
		}
	}
}
