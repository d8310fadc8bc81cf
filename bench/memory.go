package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// memoryCell is one in-memory library: single-threaded cost of a pair,
// and pairs/s on distinct keys with one and with all cores.
type memoryCell struct {
	Library     string  `json:"library"`
	Floor       bool    `json:"floor"`
	Pass        int     `json:"pass"`
	NsPerPair   float64 `json:"nsPerPair"`
	AllocsPair  int64   `json:"allocsPerPair"`
	OneCore     float64 `json:"pairsPerSecOneCore"`
	AllCores    float64 `json:"pairsPerSecAllCores"`
	Cores       int     `json:"cores"`
	Scaling     float64 `json:"scaling"`
	RatioFloor  float64 `json:"nsRatioToFloor"` // ours / floor's ns per pair
	FirstError  string  `json:"firstError,omitempty"`
	ErrorsCount int64   `json:"errors"`
}

func memorySection(p plan, progress func(string, ...any)) []memoryCell {
	var cells []memoryCell
	libs := selected(memoryLibraries())
	for pass := range p.fewer {
		for _, lib := range inPassOrder(libs, pass) {
			cells = append(cells, memoryRun(lib, p, pass+1))
			c := cells[len(cells)-1]
			progress("memory, pass %d: %-24s %6.0f ns/pair %d allocs/pair  1 core %9.0f/s  %d cores %9.0f/s (x%.2f) %s",
				pass+1, lib.name, c.NsPerPair, c.AllocsPair, c.OneCore, c.Cores, c.AllCores, c.Scaling, c.FirstError)
		}
	}
	floor := map[int]float64{}
	for _, c := range cells {
		if c.Floor {
			floor[c.Pass] = c.NsPerPair
		}
	}
	for i := range cells {
		if f := floor[cells[i].Pass]; f > 0 {
			cells[i].RatioFloor = cells[i].NsPerPair / f
		}
	}
	return cells
}

func memoryRun(lib library, p plan, pass int) (c memoryCell) {
	c.Library, c.Floor, c.Pass, c.Cores = lib.name, lib.floor, pass, runtime.GOMAXPROCS(0)
	e := env{prefix: fmt.Sprintf("mem%d:", prefixSeq.Add(1)), ttl: p.ttl}
	cl, err := lib.open(e)
	if err != nil {
		c.FirstError = err.Error()
		return c
	}
	defer cl.close()
	m := cl.mutex("single")
	ctx := context.Background()
	var benchErr error
	single := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := pair(ctx, m); err != nil {
				benchErr = err
				b.FailNow()
			}
		}
	}
	procs := runtime.GOMAXPROCS(1)
	br := testing.Benchmark(single)
	runtime.GOMAXPROCS(procs)
	if benchErr != nil {
		c.FirstError = benchErr.Error()
		return c
	}
	c.NsPerPair, c.AllocsPair = float64(br.NsPerOp()), br.AllocsPerOp()
	if *quick {
		c.NsPerPair = float64(br.T.Nanoseconds()) / float64(max(br.N, 1))
	}

	// Scaling: one goroutine per core, each on its own key.
	runtime.GOMAXPROCS(1)
	one := throughput(lib, env{prefix: e.prefix + "one:", ttl: p.ttl}, 1, p.throughput, false, nil)
	runtime.GOMAXPROCS(procs)
	all := throughput(lib, env{prefix: e.prefix + "all:", ttl: p.ttl}, procs, p.throughput, false, nil)
	c.OneCore, c.AllCores = one.PairsPerSec, all.PairsPerSec
	if one.PairsPerSec > 0 {
		c.Scaling = all.PairsPerSec / one.PairsPerSec
	}
	c.ErrorsCount = one.Errors + all.Errors
	if c.FirstError == "" {
		c.FirstError = one.FirstError + all.FirstError
	}
	return c
}

// memcachedLeft counts the keys of the 64 goroutines of a memcached cell
// that are still there.
func memcachedLeft(e env) leftoverFunc {
	return func(prefix string) (int, int) {
		c := memcache.New(e.memcached)
		c.Timeout = time.Second
		defer c.Close()
		n := 0
		for i := range 64 {
			if _, err := c.Get(fmt.Sprintf("%sk%d", prefix, i)); err == nil {
				n++
			}
		}
		return n, 0
	}
}
