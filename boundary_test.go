package exq

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisTypeFiles may import go-redis, and only to name its client type where the public API
// must: Options.Redis and ClientOptions.Redis (config.go), ShardNamespaces (sharded.go).
var redisTypeFiles = map[string]bool{"config.go": true, "sharded.go": true}

const goRedis = "github.com/redis/go-redis/v9"

// redisUses lists what file name (its source src) does that only internal/store may: import
// go-redis (outside redisTypeFiles, or there for anything but redis.UniversalClient), import
// the store's scripts, or call a method on a client held in a field named Redis.
func redisUses(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	redisName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == goRedis && !redisTypeFiles[name]:
			out = append(out, "imports "+path)
		case path == goRedis:
			redisName = "redis"
			if imp.Name != nil {
				redisName = imp.Name.Name
			}
		case strings.HasPrefix(path, "github.com/exqgo/exq/internal/store/"):
			out = append(out, "imports "+path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && redisName != "" && id.Name == redisName && n.Sel.Name != "UniversalClient" {
				out = append(out, "uses "+redisName+"."+n.Sel.Name)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if field, ok := sel.X.(*ast.SelectorExpr); ok && field.Sel.Name == "Redis" {
					out = append(out, "calls ."+field.Sel.Name+"."+sel.Sel.Name)
				}
			}
		}
		return true
	})
	return out, nil
}

// Every Redis command of the library is sent by internal/store: the root package's non-test
// files do not import go-redis (but to name the client type of the public API) or the
// store's scripts, and call nothing on the caller's client. (.ci/run greps the other
// packages for EVAL, pipelines and client construction.)
func TestOnlyTheStoreTalksToRedis(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		uses, err := redisUses(name, src)
		require.NoError(t, err)
		assert.Empty(t, uses, "%s: only internal/store may talk to Redis", name)
		checked++
	}
	assert.Greater(t, checked, 20, "the root package's files were read")
}

// The check above finds each kind of use it is there for.
func TestRedisUsesFindsWhatOnlyTheStoreMayDo(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		want            []string
	}{
		{"a go-redis import", "api.go", `package exq; import "github.com/redis/go-redis/v9"; var _ redis.Cmdable`, []string{"imports " + goRedis}},
		{"an aliased go-redis import", "api.go", `package exq; import r "github.com/redis/go-redis/v9"; var _ r.Cmdable`, []string{"imports " + goRedis}},
		{"the scripts", "manager.go", `package exq; import "github.com/exqgo/exq/internal/store/scripts"; var _ = scripts.Fetch`,
			[]string{"imports github.com/exqgo/exq/internal/store/scripts"}},
		{"more than the client type in an allowed file", "config.go", `package exq; import "github.com/redis/go-redis/v9"; var _ = redis.NewClient`,
			[]string{"uses redis.NewClient"}},
		{"a command on the caller's client", "exq.go", `package exq; func f(o Options) { o.Redis.Ping(nil) }`, []string{"calls .Redis.Ping"}},
		{"the client type where the public API names it", "config.go", `package exq; import "github.com/redis/go-redis/v9"; type O struct{ Redis redis.UniversalClient }`, nil},
		{"the store", "api.go", `package exq; import "github.com/exqgo/exq/internal/store"; var _ *store.Store`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redisUses(tc.file, []byte(tc.src))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
