package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// inlineLink is a Markdown inline link or image, [text](target) or ![alt](target); its target
// has no spaces (the pages write none).
var inlineLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// codeSpan is an inline code span, whose text is not a link.
var codeSpan = regexp.MustCompile("`[^`]*`")

// scheme begins a link that is not relative: http:, https:, mailto:.
var scheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

// heading is an ATX heading: its text, without the closing #s.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)

// htmlAnchor is an anchor written in HTML, <a name="x"> or <a id="x">.
var htmlAnchor = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)

// slug is the anchor GitHub gives a heading: lower case, inline code's backticks and every
// punctuation mark but '-' and '_' dropped, spaces made '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// prose calls f with each line of page outside fenced code blocks.
func prose(page string, f func(line int, text string)) error {
	data, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	fenced := false
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			f(i+1, l)
		}
	}
	return nil
}

// anchors are the anchors a page has: its headings' slugs (a repeated one gets -1, -2, …, as
// on GitHub) and its HTML anchors.
func anchors(page string) (map[string]bool, error) {
	out := map[string]bool{}
	seen := map[string]int{}
	err := prose(page, func(_ int, l string) {
		if m := heading.FindStringSubmatch(l); m != nil {
			s := slug(m[1])
			if n, ok := seen[s]; ok {
				seen[s] = n + 1
				s = fmt.Sprintf("%s-%d", s, n+1)
			} else {
				seen[s] = 0
			}
			out[s] = true
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			out[m[1]] = true
		}
	})
	return out, err
}

// brokenLinks lists every relative link of the Markdown pages under dir that names a file or
// folder that does not exist, or an anchor that the Markdown page it names does not have.
func brokenLinks(dir string) ([]string, error) {
	var pages []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, page := range pages {
		err := prose(page, func(line int, l string) {
			for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				rel, _ := filepath.Rel(dir, page)
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				if _, err := os.Stat(path); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", rel, line, target))
					continue
				}
				if anchor == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				as, err := anchors(path)
				if err != nil || !as[anchor] {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such heading", rel, line, target))
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return broken, nil
}

// TestEveryRelativeLinkInTheDocsResolves: every relative link of every Markdown page of the
// repository (the README, docs/, examples/, the modules') names a file or folder that exists,
// and its #anchor a heading of that page.
func TestEveryRelativeLinkInTheDocsResolves(t *testing.T) {
	t.Parallel()
	broken, err := brokenLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// The link check finds a missing file, a missing folder and a missing anchor, and takes the
// anchors GitHub makes (punctuation and backticks dropped, a repeated heading numbered), links
// to folders and to other schemes, and ignores links inside code.
func TestTheLinkCheckFindsBrokenLinksOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/b.md", "# The `exq` command: its JSON\n\n## Notes\n\n## Notes\n\n<a id=\"raw\"></a>\n")
	write("sub/x.go", "package x\n")
	write("a.md", strings.Join([]string{
		"[ok](sub/b.md) [ok](sub/b.md#the-exq-command-its-json) [ok](sub/b.md#notes-1) [ok](sub/b.md#raw)",
		"[ok](sub/) [ok](sub/x.go#L1) [ok](https://example.com/x.md) [ok](#top) ![ok](sub/x.go)",
		"# Top",
		"`[not a link](nowhere.md)`",
		"```",
		"[not a link](nowhere.md)",
		"```",
		"[bad](nowhere.md) [bad](sub/b.md#notes-2) [bad](gone/) [bad](#missing)",
	}, "\n"))
	broken, err := brokenLinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a.md:8: nowhere.md: no such file",
		"a.md:8: sub/b.md#notes-2: no such heading",
		"a.md:8: gone/: no such file",
		"a.md:8: #missing: no such heading",
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
}
