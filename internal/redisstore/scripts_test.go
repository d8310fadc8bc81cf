package redisstore

import (
	"strings"
	"testing"
)

// grant.lua lifts fences by LiftAhead, written in its Lua as a
// constant: it must be the Go constant's value.
func TestGrantLiftAheadIsLiftAhead(t *testing.T) {
	want := "local liftAhead = " + itoa(LiftAhead) + "\n"
	if !strings.Contains(releaseScript.Src, want) {
		t.Errorf("grant.lua does not say %q: its lift lead differs from LiftAhead (%d)", strings.TrimSpace(want), LiftAhead)
	}
}
