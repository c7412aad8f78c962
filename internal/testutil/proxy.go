package testutil

import (
	"bytes"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of a Redis that a test can take down and bring back on the same
// address, slow down, freeze, or point at another server (a failover), to show what exq does.
type Proxy struct {
	t    testing.TB
	addr string

	mu      sync.Mutex
	target  string
	latency time.Duration
	jitter  time.Duration // each reply waits latency plus up to this much more
	rnd     *rand.Rand
	frozen  chan struct{} // closed while traffic flows; open while frozen
	ln      net.Listener
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup

	cuts    int      // requests still to cut after (see CutReplyTo)
	markers [][]byte // what such a request contains
	cut     chan struct{}
	cutAll  int // replies cut since the proxy started (see Cuts)
}

// link is one client connection and its upstream connection.
type link struct {
	client, upstream net.Conn
	dropReply        atomic.Bool // the next reply must not reach the client
}

// NewProxy starts a proxy on a free loopback port that forwards to target (host:port). It is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	flowing := make(chan struct{})
	close(flowing)
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}, frozen: flowing}
	p.serve(ln)
	t.Cleanup(func() { p.Down(); p.wg.Wait() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Down refuses new connections and cuts the open ones, as a crashed Redis would.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	// Data held by a Freeze would keep its pipe waiting forever; let it fail on the closed
	// connections instead.
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

// Up listens again on the same address.
func (p *Proxy) Up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy relisten on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			if !p.track(c, up) {
				return
			}
			l := &link{client: c, upstream: up}
			p.wg.Add(2)
			go p.pipe(l, c, up, false)
			go p.pipe(l, up, c, true)
		}
	}()
}

// track registers a connection pair, or closes it when the proxy went down meanwhile.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = a.Close()
		_ = b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst; replies (upstream to client) carry the added latency. A request
// that CutReplyTo asked for is forwarded, and the reply it gets is dropped with both
// connections: Redis ran the command, the client only sees its connection break.
func (p *Proxy) pipe(l *link, src, dst net.Conn, replies bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			latency, frozen := p.latency, p.frozen
			if replies && p.jitter > 0 {
				latency += time.Duration(p.rnd.Int63n(int64(p.jitter) + 1))
			}
			if !replies && p.cuts > 0 && containsAny(buf[:n], p.markers) {
				p.cuts--
				l.dropReply.Store(true)
			}
			p.mu.Unlock()
			<-frozen // a frozen proxy holds the bytes: the peer sees a hung connection
			if replies && l.dropReply.Load() {
				_ = l.client.Close()
				_ = l.upstream.Close()
				p.mu.Lock()
				cut := p.cut
				p.cutAll++
				p.mu.Unlock()
				select {
				case cut <- struct{}{}:
				default:
				}
				break
			}
			if latency > 0 && replies {
				time.Sleep(latency)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func containsAny(b []byte, markers [][]byte) bool {
	for _, m := range markers {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// CutReplyTo makes the proxy cut the connection of the next n requests that contain any of
// markers (a script's SHA1 for EVALSHA, a line of its source for EVAL, "multi"…) after
// forwarding them to Redis and before their reply reaches the client: the fault of a
// connection that drops mid-command, which a client library may answer by sending the same
// command again. The returned channel receives once per cut (buffered for n).
func (p *Proxy) CutReplyTo(n int, markers ...string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts = n
	p.markers = p.markers[:0]
	for _, m := range markers {
		p.markers = append(p.markers, []byte(m))
	}
	p.cut = make(chan struct{}, n)
	return p.cut
}

// Cuts is the number of replies the proxy has cut since it started, over every CutReplyTo:
// a test that re-arms CutReplyTo while it runs counts its cuts here.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutAll
}

// SetLatency delays every reply from Redis by d, so each round trip takes d longer (0 turns it
// off).
func (p *Proxy) SetLatency(d time.Duration) { p.SetJitter(d, d) }

// SetJitter delays every reply from Redis by a random time between lo and hi, drawn anew for
// each read of a reply; the replies of a connection keep their order (a slow, uneven link).
func (p *Proxy) SetJitter(lo, hi time.Duration) {
	p.mu.Lock()
	p.latency, p.jitter = lo, max(hi-lo, 0)
	if p.rnd == nil {
		p.rnd = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	p.mu.Unlock()
}

// Freeze keeps connections open but stops forwarding data, as a network partition that
// drops packets would; Thaw lets it flow again.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
		p.frozen = make(chan struct{})
	default:
	}
}

// Thaw ends a Freeze.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
}

// Switch points new connections at target. With cut, open connections are closed too (a
// failover that drops clients); without, they stay on the old server (a demoted primary).
func (p *Proxy) Switch(target string, cut bool) {
	p.mu.Lock()
	p.target = target
	var open []net.Conn
	if cut {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}
