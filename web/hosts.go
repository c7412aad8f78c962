package web

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// DNS rebinding: a page on rebind.attacker.example whose name the attacker then points at
// 127.0.0.1 is, to the browser, the same origin as the dashboard it reaches; it can read every
// page and post every form with a valid token. What gives it away is the Host header: the
// attacker's name. So the handler serves only the names it was told about (Options.AllowedHosts),
// "localhost", and IP addresses: a rebinding page always has a name, never an address.

// hostAllowed reports whether a request's Host is one the dashboard serves.
func (h *handler) hostAllowed(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if a == "*" || hostName(a) == name {
			return true
		}
	}
	return false
}

// hostName is the lower-case name or address of a Host header (or an AllowedHosts entry),
// without its port, brackets or trailing dot; "" when it is not one.
func hostName(host string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(host, ".")
	if host == "" || strings.ContainsAny(host, "/\\@ ") {
		return ""
	}
	return host
}

// refuseHost answers a request for a name the dashboard does not serve. The status is 421
// Misdirected Request; the body names the option, never the Host it got.
func refuseHost(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_, _ = w.Write([]byte("exq: this dashboard does not serve that host name (a DNS rebinding guard); " +
		"list it in web.Options.AllowedHosts (exq web --allowed-host)\n"))
}

// originAllowed reports whether an Origin header names this request's host.
func (h *handler) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host) && h.hostAllowed(u.Host)
}
