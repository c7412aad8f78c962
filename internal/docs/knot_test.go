package docs

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxKnot is the largest set of the root package's non-test files allowed to depend on each
// other in a cycle (a strongly connected component of the graph "file A uses a name declared
// in file B"). Public types live in leaf files that no engine code is declared in, and the
// engine's parts are built from explicit parts, so one concern can be read without the rest.
const maxKnot = 6

// fileGraph type-checks the root package's non-test files and returns, for each file, the
// files that declare the package-level (or method, field) objects it uses.
func fileGraph(t *testing.T) map[string]map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t))}
	pkg, err := conf.Check("github.com/exqgo/exq", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	graph := map[string]map[string]bool{}
	for _, f := range files {
		graph[fileOf(f.Pos())] = map[string]bool{}
	}
	use := func(from token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		if _, local := obj.(*types.PkgName); local {
			return
		}
		a, b := fileOf(from), fileOf(obj.Pos())
		if a != b {
			graph[a][b] = true
		}
	}
	for id, obj := range info.Uses {
		use(id.Pos(), obj)
	}
	for sel, s := range info.Selections {
		use(sel.Sel.Pos(), s.Obj())
	}
	return graph
}

// exportData finds the compiled export data of the root package's imports (go list -export),
// which type-checks the package in a second where reading every import's source takes half a
// minute.
func exportData(t *testing.T) func(path string) (io.ReadCloser, error) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "="); ok && file != "" {
			files[path] = file
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
}

// knots returns the strongly connected components of g with more than one file, largest
// first (Tarjan's algorithm).
func knots(g map[string]map[string]bool) [][]string {
	nodes := make([]string, 0, len(g))
	for n := range g {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		succ := make([]string, 0, len(g[v]))
		for w := range g[v] {
			succ = append(succ, w)
		}
		sort.Strings(succ)
		for _, w := range succ {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				sort.Strings(comp)
				out = append(out, comp)
			}
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// TestRootFileKnotIsSmall keeps the root package's files from growing back into one knot in
// which every file depends on every other: the largest cycle of files using each other's
// names must stay at most maxKnot files.
func TestRootFileKnotIsSmall(t *testing.T) {
	ks := knots(fileGraph(t))
	for _, k := range ks {
		t.Logf("knot of %d files: %s", len(k), strings.Join(k, " "))
	}
	if len(ks) > 0 && len(ks[0]) > maxKnot {
		t.Errorf("the root package's largest knot of mutually dependent files has %d files (at most %d): %s",
			len(ks[0]), maxKnot, strings.Join(ks[0], " "))
		explain(t, fileGraph(t), ks[0])
	}
}

// explain logs, for each file of the knot, the files of the knot it uses.
func explain(t *testing.T, g map[string]map[string]bool, knot []string) {
	in := map[string]bool{}
	for _, f := range knot {
		in[f] = true
	}
	for _, f := range knot {
		var uses []string
		for w := range g[f] {
			if in[w] {
				uses = append(uses, w)
			}
		}
		sort.Strings(uses)
		t.Logf("%s uses %s", f, strings.Join(uses, " "))
	}
}

func TestKnotsAreTheCyclesOfFilesLargestFirst(t *testing.T) {
	g := map[string]map[string]bool{
		"a.go": {"b.go": true},
		"b.go": {"c.go": true, "d.go": true},
		"c.go": {"a.go": true},
		"d.go": {"e.go": true},
		"e.go": {"d.go": true},
		"f.go": {"a.go": true},
		"g.go": {},
	}
	got := knots(g)
	want := [][]string{{"a.go", "b.go", "c.go"}, {"d.go", "e.go"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("knots = %v, want %v", got, want)
	}
}
