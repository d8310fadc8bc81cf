// Package faultproxy is a loopback TCP proxy that injects network faults
// between a client and a server, for tests on machines without tc or
// iptables.
//
// A [Proxy] listens on 127.0.0.1 and forwards every connection to its
// target. Each direction — [ToServer] (requests) and [ToClient] (replies) —
// has a [Mode] that can be switched at any time, and applies to the
// connections already open as well as to new ones:
//
//   - [Pass] forwards at once.
//   - [Delay] forwards each chunk after a latency ± jitter, drawn when the
//     chunk is read; chunks keep their order.
//   - [Hold] forwards nothing and keeps the connection open: a network
//     partition. What was sent meanwhile is held, in order, and delivered
//     once the direction passes again, as TCP retransmission would after a
//     partition heals.
//   - [Drop] discards what is sent. On [ToClient] alone it loses replies:
//     the server applies the commands and the client never hears. Losing
//     bytes corrupts the byte stream, which TCP never does, so a connection
//     that lost bytes is reset (RST) as soon as its direction stops
//     dropping, as it would be by a client that timed out.
//
// [Proxy.Reset] resets every open connection (RST on both sides) and
// [Proxy.Refuse] makes the proxy reset new connections as soon as it
// accepts them. [Proxy.Close] stops everything and waits for every
// goroutine of the proxy to end.
//
//	p, err := faultproxy.New(server.Addr())
//	...
//	defer p.Close()
//	client := connect(p.Addr())
//	p.Set(faultproxy.ToClient, faultproxy.Drop()) // lost replies
//	...
//	p.Heal()
package faultproxy
