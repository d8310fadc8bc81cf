package main

import (
	"math/bits"
	"time"
)

// histogram counts durations in logarithmic buckets of 64 sub-buckets per
// power of two (under 1.6% error), in constant memory however many are
// recorded.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histSub     = 64                     // sub-buckets per power of two
	histBuckets = 2*histSub + 57*histSub // up to 2^64 ns
)

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	e := bits.Len64(v) - 7 // v>>e is in [64, 127]
	return 2*histSub + (e-1)*histSub + int(v>>e) - histSub
}

// histValue returns the middle of bucket i.
func histValue(i int) time.Duration {
	if i < 2*histSub {
		return time.Duration(i)
	}
	e := (i-2*histSub)/histSub + 1
	m := uint64((i-2*histSub)%histSub + histSub)
	lo, hi := m<<e, (m+1)<<e
	return time.Duration((lo + hi) / 2)
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := min(histIndex(uint64(d)), histBuckets-1)
	h.counts[i]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q ≤ 1) by nearest rank, or 0.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histValue(i), h.max)
		}
	}
	return h.max
}
