package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// webLimits bound what one client can hold of `exq web`: time to send its headers and body,
// time for the answer, how long an idle keep-alive connection stays, and how many connections
// are served at once (the others wait in the listen backlog). A dashboard needs few.
type webLimits struct {
	readHeader, read, write, idle time.Duration
	maxConns                      int
	maxHeaderBytes                int
}

// defaultWebLimits are exq web's: a body trickled a byte at a time is cut after 15 s, a page
// must be written within 60 s (every page's work is bounded well below that), and 64
// connections at once are plenty for people looking at a dashboard.
var defaultWebLimits = webLimits{
	readHeader: 5 * time.Second, read: 15 * time.Second, write: 60 * time.Second, idle: 60 * time.Second,
	maxConns: 64, maxHeaderBytes: 64 << 10,
}

// newWebServer is the HTTP server of exq web, with its limits.
func newWebServer(h http.Handler, l webLimits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read, WriteTimeout: l.write,
		IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
}

// limitListener serves at most n connections at once: Accept waits for one to close.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limitedListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// beyondLoopback reports whether a listen address is reachable from other machines: any
// address but a loopback one (an empty host or 0.0.0.0 listens everywhere; a name is looked
// up as the listener would).
func beyondLoopback(ln net.Listener) bool {
	a, ok := ln.Addr().(*net.TCPAddr)
	return !ok || !a.IP.IsLoopback()
}
