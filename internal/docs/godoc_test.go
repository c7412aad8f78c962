package docs

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// internalNames matches a reference to an internal package of the repository (its name and a
// selector: "cronspec.Schedule", "flows.BatchTTL") or a source file by its bare name ("see
// bind.go"), which a reader of `go doc` cannot follow.
func internalNames(t *testing.T) *regexp.Regexp {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, regexp.QuoteMeta(e.Name()))
		}
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\.[A-Za-z]|(^|[\s(])\w+\.(go|lua)\b`)
}

// TestTheRootPackagesDocNamesNoInternalPackage: what `go doc -all` shows of package exq (the
// doc comment of every exported name, its fields' comments, its constants' and variables'
// values) names no internal package, type or source file.
func TestTheRootPackagesDocNamesNoInternalPackage(t *testing.T) {
	re := internalNames(t)
	fset := token.NewFileSet()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(root, name), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/exqgo/exq")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, text string) {
		t.Helper()
		for _, line := range strings.Split(text, "\n") {
			if re.MatchString(line) {
				t.Errorf("%s: %q names an internal package or file", what, strings.TrimSpace(line))
			}
		}
	}
	check("package doc", p.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			check(strings.Join(v.Names, ", "), v.Doc)
			for _, s := range v.Decl.Specs {
				vs := s.(*ast.ValueSpec)
				if vs.Doc != nil {
					check(vs.Names[0].Name, vs.Doc.Text())
				}
				// go doc shows a constant's or a variable's value as written (an error
				// variable set to an internal package's sentinel named that package)
				for _, x := range vs.Values {
					var b strings.Builder
					_ = printer.Fprint(&b, fset, x)
					check(vs.Names[0].Name+"'s value", b.String())
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		check(f.Name, f.Doc)
	}
	for _, typ := range p.Types {
		check(typ.Name, typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range append(typ.Funcs, typ.Methods...) {
			check(typ.Name+"."+f.Name, f.Doc)
		}
		for _, s := range typ.Decl.Specs {
			st, ok := s.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				if field.Doc != nil && len(field.Names) > 0 && field.Names[0].IsExported() {
					check(typ.Name+"."+field.Names[0].Name, field.Doc.Text())
				}
			}
		}
	}
}
