package memcache

import (
	"fmt"
	"math"
	"time"

	"github.com/lockkit/lock"
)

// maxRelative is the largest expiration memcached takes as relative, in
// seconds (30 days); it reads larger values as a Unix time, so a larger
// relative value would be a time in 1970 and expire the item at once.
const maxRelative = 30 * 24 * 60 * 60

// expiration converts ttl to memcached's expiration, rounded up to whole
// seconds: relative seconds up to 30 days, beyond that the absolute Unix
// time now+ttl (read against the server's clock, so long TTLs shift by the
// clock difference between client and server).
func expiration(ttl time.Duration, now time.Time) (int32, error) {
	secs := int64(ttl / time.Second)
	if ttl%time.Second != 0 {
		secs++
	}
	if secs <= maxRelative {
		return int32(secs), nil
	}
	end := now.Add(ttl)
	abs := end.Unix()
	if end.Nanosecond() != 0 {
		abs++
	}
	if abs > math.MaxInt32 {
		return 0, fmt.Errorf("%w: ttl %v ends after %v, past the 32-bit Unix times memcached takes", lock.ErrInvalid, ttl, time.Unix(math.MaxInt32, 0).UTC())
	}
	return int32(abs), nil
}
