package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package.
const root = "../.."

var marker = regexp.MustCompile(`^<!-- code: (\S+\.go) -->$`)

// markdownFiles are the pages whose Go blocks must be real code: the README and every page
// under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// goBlock is a ```go block of a page: where it starts and the file it says it comes from.
type goBlock struct {
	line   int // 1-based line of the opening fence
	source string
	lines  []string
}

func goBlocks(t *testing.T, page string) []goBlock {
	t.Helper()
	data, err := os.ReadFile(page)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []goBlock
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		b := goBlock{line: i + 1}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if m := marker.FindStringSubmatch(strings.TrimSpace(lines[j])); m != nil {
				b.source = m[1]
			}
			break
		}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			b.lines = append(b.lines, lines[i])
		}
		out = append(out, b)
	}
	return out
}

// contains reports whether block appears in file as a run of lines, allowing the run to be
// indented by a common prefix of tabs in the file (an excerpt of a function's body).
func contains(file, block []string) bool {
	if len(block) == 0 {
		return false
	}
	for i := 0; i+len(block) <= len(file); i++ {
		first := strings.TrimRight(file[i], " \t")
		want := strings.TrimRight(block[0], " \t")
		if !strings.HasSuffix(first, want) {
			continue
		}
		indent := first[:len(first)-len(want)]
		if strings.Trim(indent, "\t") != "" {
			continue
		}
		ok := true
		for j, l := range block {
			got := strings.TrimRight(file[i+j], " \t")
			l = strings.TrimRight(l, " \t")
			if l == "" && got == "" {
				continue
			}
			if got != indent+l {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestEveryGoBlockInTheDocsIsCodeThatCIBuilds(t *testing.T) {
	blocks := 0
	for _, page := range markdownFiles(t) {
		rel, _ := filepath.Rel(root, page)
		for _, b := range goBlocks(t, page) {
			blocks++
			if b.source == "" {
				t.Errorf("%s:%d: a ```go block needs a line <!-- code: PATH --> before it naming the Go file it comes from", rel, b.line)
				continue
			}
			data, err := os.ReadFile(filepath.Join(root, b.source))
			if err != nil {
				t.Errorf("%s:%d: %v", rel, b.line, err)
				continue
			}
			if !contains(strings.Split(string(data), "\n"), b.lines) {
				t.Errorf("%s:%d: the block is not in %s line for line (edit the code there, then copy it here)", rel, b.line, b.source)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("found no ```go block at all: the pages moved?")
	}
}

func TestContainsFindsIndentedExcerptsOnly(t *testing.T) {
	file := []string{"func f() {", "\tif x {", "\t\treturn 1", "\t}", "}"}
	cases := []struct {
		name  string
		block []string
		want  bool
	}{
		{"whole file", file, true},
		{"indented excerpt", []string{"if x {", "\treturn 1", "}"}, true},
		{"changed line", []string{"if x {", "\treturn 2", "}"}, false},
		{"lines out of order", []string{"}", "if x {"}, false},
		{"indented by spaces", []string{"  return 1"}, false},
		{"empty block", nil, false},
	}
	for _, c := range cases {
		if got := contains(file, c.block); got != c.want {
			t.Errorf("%s: contains = %v, want %v", c.name, got, c.want)
		}
	}
}
