package web

import (
	"net/http"
	"strings"
)

// Cross-site GETs: any page on the web can make a browser fetch a dashboard URL (an <img>, a
// link, a redirect). The pages below are cheap whatever the data (bounded reads) and may be
// reached from elsewhere (a link in a chat); every other GET (a search, a filter, a job's page,
// a raw download) scans Redis and is refused when the browser says it comes from another site
// (Sec-Fetch-Site cross-site or same-site), with a link to open it from the dashboard itself.

// cheapPages are the paths any site may link to, with their cheap parameters.
var cheapPages = map[string]bool{"/": true, "/queues": true, "/busy": true, "/periodic": true,
	"/retries": true, "/scheduled": true, "/dead": true, "/search": true, "/stats.json": true}

var cheapParams = map[string]bool{"page": true, "sort": true, "days": true, "done": true, "n": true}

// crossSiteAllowed reports whether a GET from another site may be served.
func crossSiteAllowed(r *http.Request, path string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	if strings.HasPrefix(path, "/static/") {
		return true
	}
	if !cheapPages[path] {
		return false
	}
	for k := range r.URL.Query() {
		if !cheapParams[k] {
			return false // a filter or a search: it scans
		}
	}
	return true
}

// refuseCrossSite answers an expensive GET that came from another site: 403, and a link to
// the same page, which a click on the dashboard's own page sends same-origin.
func (h *handler) refuseCrossSite(w http.ResponseWriter, r *http.Request) {
	here := h.opts.Prefix + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		here += "?" + r.URL.Query().Encode()
	}
	h.render(w, r, http.StatusForbidden, "error.html", "", http.StatusText(http.StatusForbidden), errorData{
		Msg:  "This page searches Redis, and the request came from another site, so it was not run. If you meant to open it, open it from here:",
		Link: here,
	})
}

// errorData is an error page's message, with a link to follow when there is one.
type errorData struct {
	Msg  string
	Link string // under the prefix, already escaped
}
