package shard_test

import (
	"strconv"
	"testing"

	"github.com/lockkit/lock/internal/shard"
)

// Keys spread evenly: the typical names of locks (a prefix and a number,
// short or long) fill every shard, none with more than twice its share.
func TestOfSpreads(t *testing.T) {
	const n, keys = 64, 64000
	for _, pattern := range []string{"%d", "j%d", "job/%d", "tenant/acme/invoice/%d", "%d/lock"} {
		counts := make([]int, n)
		for i := range keys {
			k := pattern[:len(pattern)-2]
			if pattern[0] == '%' {
				k = strconv.Itoa(i) + pattern[2:]
			} else {
				k += strconv.Itoa(i)
			}
			s := shard.Of(k, n)
			if s < 0 || s >= n {
				t.Fatalf("Of(%q, %d) = %d; want a shard in [0, %d)", k, n, s, n)
			}
			counts[s]++
		}
		for s, c := range counts {
			if c == 0 || c > 2*keys/n {
				t.Errorf("pattern %q: shard %d got %d of %d keys; want about %d", pattern, s, c, keys, keys/n)
			}
		}
	}
}
