package faultsuite

import (
	"time"

	"github.com/lockkit/lock/internal/testing/faultkit"
	"github.com/lockkit/lock/internal/testing/faultproxy"
)

// Links are the connections of an election's candidates to the stores,
// through fault proxies: Links[i] are candidate i's. Their methods make
// the faults of the election scenarios (issue #19), which strike the
// leader of the moment (see faultkit.Election).
type Links [][]*faultproxy.Proxy

func (l Links) set(dir faultproxy.Direction, m faultproxy.Mode) func(int) {
	return func(i int) {
		for _, p := range l[i] {
			p.Set(dir, m)
		}
	}
}

func (l Links) heal(i int) {
	for _, p := range l[i] {
		p.Heal()
	}
}

// Pause stalls the leader's connections both ways from at for d, as if
// its process were stopped.
func (l Links) Pause(at, d time.Duration) faultkit.LeaderFault {
	return faultkit.LeaderFault{At: at, For: d, Inject: l.set(faultproxy.Both, faultproxy.Hold()), Heal: l.heal}
}

// SlowReplies delays the replies to the leader by latency from at for d:
// its renewals take effect, but it hears of them late.
func (l Links) SlowReplies(at, d, latency time.Duration) faultkit.LeaderFault {
	return faultkit.LeaderFault{At: at, For: d, Inject: l.set(faultproxy.ToClient, faultproxy.Delay(latency, 0)), Heal: l.heal}
}

// LoseReplies drops the replies to the leader from at for d: its
// requests take effect, and it never hears of them.
func (l Links) LoseReplies(at, d time.Duration) faultkit.LeaderFault {
	return faultkit.LeaderFault{At: at, For: d, Inject: l.set(faultproxy.ToClient, faultproxy.Drop()), Heal: l.heal}
}

// Kill stalls the leader's connections for good at at: it acts no more
// and never resigns.
func (l Links) Kill(at time.Duration) faultkit.LeaderFault {
	f := l.Pause(at, 0)
	f.Kill = true
	return f
}
