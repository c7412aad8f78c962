package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/exqgo/exq"
)

// NewSharded is the dashboard of namespaces sharded over several Redis masters
// (exq.ShardedAPI). Its first page sums the counters of every shard and lists each shard with
// its own; each shard has the whole dashboard, every page and action of New, under
// <Prefix>/shards/<n>/ (n counts from 0 in ShardOptions.Namespaces order), with a link back.
// A job lives in one shard, so lists, job pages and actions are per shard. Options apply to
// every shard's pages; each shard's title adds its namespace. It panics as New does.
func NewSharded(api *exq.ShardedAPI, opts Options) http.Handler {
	if api == nil || len(api.Shards()) == 0 {
		panic("web: NewSharded: api is nil or has no shard")
	}
	top := newHandler(nil, opts, "NewSharded")
	s := &shardedHandler{top: top, api: api}
	for i, shard := range api.Shards() {
		o := top.opts
		o.Prefix = top.opts.Prefix + "/shards/" + strconv.Itoa(i)
		o.Title = top.opts.Title + " · " + shard.Namespace()
		h := newHandler(shard, o, "NewSharded")
		h.up = top.opts.Prefix
		s.shards = append(s.shards, h)
	}
	top.mux.HandleFunc("GET /{$}", s.overview)
	top.mux.HandleFunc("GET /static/{file}", top.static)
	top.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		top.errorPage(w, r, http.StatusNotFound, "There is no page here.")
	})
	return s
}

// shardedHandler routes /shards/<n>/… to shard n's dashboard and serves the overview itself.
type shardedHandler struct {
	top    *handler
	api    *exq.ShardedAPI
	shards []*handler
}

func (s *shardedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, raw := r.URL.Path, r.URL.EscapedPath()
	if pre := s.top.opts.Prefix; pre != "" && (path == pre || strings.HasPrefix(path, pre+"/")) {
		path, raw = strings.TrimPrefix(path, pre), strings.TrimPrefix(raw, pre)
	}
	if rest, ok := strings.CutPrefix(path, "/shards/"); ok {
		num, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(num); err == nil && n >= 0 && n < len(s.shards) && strconv.Itoa(n) == num {
			// The shard's handler gets the path below its own prefix, as behind http.StripPrefix;
			// "/shards/<n>" has nothing to escape, so the raw path is cut by the same length.
			cut := len("/shards/") + len(num)
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath = path[cut:], ""
			if raw != path {
				r2.URL.RawPath = raw[cut:]
			}
			s.shards[n].ServeHTTP(w, r2)
			return
		}
	}
	s.top.ServeHTTP(w, r)
}

// shardRow is one shard on the overview page.
type shardRow struct {
	N         int
	Namespace string
	O         exq.Overview
	Err       string // the shard's Redis could not be read
}

// overview sums every shard's counters and lists the shards. A shard whose master does not
// answer is shown as such; the others still show.
func (s *shardedHandler) overview(w http.ResponseWriter, r *http.Request) {
	data := struct {
		Sum    exq.Overview
		Shards []shardRow
	}{}
	for i, shard := range s.api.Shards() {
		row := shardRow{N: i, Namespace: shard.Namespace()}
		o, err := shard.Overview(r.Context())
		if err != nil {
			row.Err = err.Error()
			s.top.opts.Logger.Error("exq web: shard overview failed", "namespace", row.Namespace, "err", err)
		} else {
			row.O = o
			data.Sum.Add(o)
		}
		data.Shards = append(data.Shards, row)
	}
	s.top.render(w, r, http.StatusOK, "shards.html", "shards", "Shards", data)
}
