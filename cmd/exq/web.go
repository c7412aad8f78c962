package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/exqgo/exq/internal/redact"
	"github.com/exqgo/exq/web"
)

// untimed marks a command that runs until interrupted, so --timeout does not end it.
const untimed = "untimed"

func (a *app) webCmd() *cobra.Command {
	var addr, prefix, title string
	var readOnly bool
	var hosts []string
	c := &cobra.Command{
		Use:   "web",
		Short: "Serve the web dashboard until interrupted",
		Long: `Serves exq's web dashboard (the package github.com/exqgo/exq/web) on --addr until interrupted
(Ctrl-C or SIGTERM), then stops serving gracefully. With a list of namespaces (shards) its first
page sums them and each shard has the whole dashboard under /shards/<n>/.

The dashboard has no login of its own, so the default address is loopback only. To open it to
others, put a proxy that authenticates in front of it (with --prefix if the proxy serves it under
a path), or serve it --read-only. It serves only requests for an IP address, localhost, the
--addr host and each --allowed-host name (the names a proxy or browsers use): that stops DNS
rebinding, where a web page on an attacker's name pointed at 127.0.0.1 would reach it.`,
		Example:     "  exq web\n  exq web --addr 127.0.0.1:8080 --read-only --namespace '{exq}'",
		Args:        nArgs(0, 0, "no argument"),
		Annotations: map[string]string{untimed: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return usagef("--addr %q: %v (want host:port, such as 127.0.0.1:7070)", addr, err)
			}
			if h, _, _ := net.SplitHostPort(addr); h != "" && net.ParseIP(h) == nil {
				hosts = append(hosts, h)
			}
			return a.serveWeb(cmd.Context(), addr, web.Options{Prefix: prefix, ReadOnly: readOnly, Title: title, AllowedHosts: hosts})
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:7070", "host:port to listen on")
	c.Flags().BoolVar(&readOnly, "read-only", false, "show everything, change nothing (no buttons; every POST is refused)")
	c.Flags().StringVar(&prefix, "prefix", "", "path the dashboard is reached under behind a proxy, such as /admin/exq")
	c.Flags().StringVar(&title, "title", "", "title in the header (default exq)")
	c.Flags().StringArrayVar(&hosts, "allowed-host", nil, "a host name browsers use to reach the dashboard, such as admin.example.com (repeat for more)")
	return c
}

// serveWeb connects, listens and serves until ctx ends (the signal), which is a normal end.
func (a *app) serveWeb(ctx context.Context, addr string, o web.Options) error {
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	err := a.connect(cctx, true)
	cancel()
	if err != nil {
		return err
	}
	h, err := newWebHandler(a, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if beyondLoopback(ln) {
		a.warnf("exq web listens on %s, beyond loopback, and the dashboard has no login: anyone who reaches it can see and change every job; put an authenticating proxy in front of it or use --read-only", ln.Addr())
	}
	ln = limitListener(ln, defaultWebLimits.maxConns)
	srv := newWebServer(h, defaultWebLimits)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	u, _ := a.target()
	mode := ""
	if o.ReadOnly {
		mode = " (read-only)"
	}
	what := fmt.Sprintf("namespace %q", a.nss[0])
	if len(a.nss) > 1 {
		what = fmt.Sprintf("namespaces %s (sharded)", strings.Join(a.nss, ","))
	}
	fmt.Fprintf(a.stderr, "exq web: serving %s of %s on http://%s%s/%s; Ctrl-C to stop\n",
		what, redact.URL(u), ln.Addr(), o.Prefix, mode)
	select {
	case err := <-served:
		return err // it stopped on its own: the listener failed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping the web server: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newWebHandler builds the dashboard, turning web.New's panic on a bad prefix into a usage
// error.
func newWebHandler(a *app, o web.Options) (h http.Handler, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = usagef("--prefix %q: %v", o.Prefix, v)
		}
	}()
	if a.sharded != nil {
		return web.NewSharded(a.sharded, o), nil
	}
	return web.New(a.api, o), nil
}
