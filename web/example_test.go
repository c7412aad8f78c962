package web_test

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/web"
)

// basicAuth is the embedding program's own middleware: the dashboard has no login of its
// own, so whatever guards the program's admin pages (basic auth here, a session or an SSO
// proxy elsewhere) guards it too.
func basicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="exq"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Mount the dashboard under /admin/exq/ of an application's mux, behind its authentication.
// (This example runs on an in-process Redis; use the RedisURL and Namespace of your nodes.)
func Example() {
	redis := miniredis.NewMiniRedis()
	if err := redis.Start(); err != nil {
		panic(err)
	}
	defer redis.Close()

	api, err := exq.NewAPI(context.Background(), exq.ClientOptions{RedisURL: "redis://" + redis.Addr()})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	mux := http.NewServeMux()
	dash := web.New(api, web.Options{Prefix: "/admin/exq", Title: "jobs of example.com",
		AllowedHosts: []string{"example.com"}}) // the names browsers use: a guard against DNS rebinding
	mux.Handle("/admin/exq/", basicAuth("admin", "s3cret", dash))
	// A second, read-only dashboard for people who may look but not touch:
	//   mux.Handle("/status/jobs/", web.New(api, web.Options{Prefix: "/status/jobs", ReadOnly: true}))

	for _, withAuth := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodGet, "/admin/exq/", nil)
		if withAuth {
			req.SetBasicAuth("admin", "s3cret")
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(withAuth, rec.Code)
	}
	// Output:
	// false 401
	// true 200
}
