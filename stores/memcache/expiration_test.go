package memcache

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lockkit/lock"
)

func TestExpiration(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 250_000_000, time.UTC) // .25s past a whole second
	const day = 24 * time.Hour
	tests := []struct {
		ttl  time.Duration
		want int32
	}{
		{time.Nanosecond, 1},
		{time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1500 * time.Millisecond, 2},
		{30 * time.Second, 30},
		{30 * day, maxRelative}, // the largest relative value
		// One second more is an absolute time: now+ttl, rounded up.
		{30*day + time.Second, int32(now.Add(30*day+time.Second).Unix() + 1)},
		{30*day + time.Nanosecond, int32(now.Add(30*day+time.Nanosecond).Unix() + 1)},
		{31 * day, int32(now.Add(31*day).Unix() + 1)},
		{lock.MaxTTL, int32(now.Add(lock.MaxTTL).Unix() + 1)},
	}
	for _, tt := range tests {
		got, err := expiration(tt.ttl, now)
		if err != nil || got != tt.want {
			t.Errorf("expiration(%v) = %d, %v; want %d, nil", tt.ttl, got, err, tt.want)
		}
		if got > maxRelative && time.Unix(int64(got), 0).Before(now.Add(tt.ttl)) {
			t.Errorf("expiration(%v) = %v, before now+ttl = %v", tt.ttl, time.Unix(int64(got), 0), now.Add(tt.ttl))
		}
	}

	// An absolute time on a whole second is not rounded up.
	whole := time.Unix(1_800_000_000, 0)
	if got, err := expiration(31*day, whole); err != nil || int64(got) != whole.Add(31*day).Unix() {
		t.Errorf("expiration(31 days) at a whole second = %d, %v; want %d", got, err, whole.Add(31*day).Unix())
	}

	// Past 2038 memcached cannot say it.
	late := time.Unix(math.MaxInt32, 0).Add(-40 * day)
	if got, err := expiration(41*day, late); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("expiration(41 days) 40 days before 2038-01-19 = %d, %v; want lock.ErrInvalid", got, err)
	}
}
