package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docCommand is a `$ exq …` line of a console block of the docs, or of the README.
type docCommand struct {
	where string // file:line
	args  []string
}

// shellWords splits a command line as sh would for the quoting the docs use ('…' and "…"),
// up to a comment (#), a pipe, a redirection or the end of the command (& or ;).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case strings.ContainsRune("#|>&;", r) && !in:
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

var promptExq = regexp.MustCompile(`^\s*\$ exq(\s|$)`)

// docCommands reads the `$ exq …` lines of the README and docs/.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	var out []docCommand
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			if promptExq.MatchString(l) {
				rest := strings.TrimSpace(l)[len("$ exq"):]
				out = append(out, docCommand{where: filepath.Base(p) + ":" + strconv.Itoa(i+1), args: shellWords(rest)})
			}
		}
	}
	return out
}

// Every `$ exq …` line of the README and docs/ names a command that exists, with flags it has:
// the README showed `exq retries --class Billing.Refund`, which exits 2 (unknown flag).
func TestEveryExqCommandLineOfTheDocsParses(t *testing.T) {
	t.Parallel()
	cmds := docCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d `$ exq` lines in the docs, want at least 20", len(cmds))
	}
	for _, dc := range cmds {
		a := &app{env: env{getenv: func(string) string { return "" }}}
		root := a.rootCmd()
		cmd, rest, err := root.Find(dc.args)
		if err != nil {
			t.Errorf("%s: exq %s: %v", dc.where, strings.Join(dc.args, " "), err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: exq %s: %v", dc.where, strings.Join(dc.args, " "), err)
			continue
		}
		if cmd.Args != nil {
			if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil && !cmd.HasSubCommands() {
				t.Errorf("%s: exq %s: %v", dc.where, strings.Join(dc.args, " "), err)
			}
		}
	}
}

// The split of a docs line: quotes kept together, a comment or a pipe ends it.
func TestShellWordsSplitsAsTheDocsQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want []string
	}{
		{` enqueue mail MyApp.SendEmail '[42,"welcome"]' --max-retries 3`, []string{"enqueue", "mail", "MyApp.SendEmail", `[42,"welcome"]`, "--max-retries", "3"}},
		{` --json dead | jq '.[0]'`, []string{"--json", "dead"}},
		{` stats                       # counters, as on the dashboard`, []string{"stats"}},
		{` stats --watch > stats.log & sleep 2.5; kill -INT $!`, []string{"stats", "--watch"}},
		{` web --namespace '{exq}' --addr "127.0.0.1:8080"`, []string{"web", "--namespace", "{exq}", "--addr", "127.0.0.1:8080"}},
	} {
		if got := shellWords(tc.line); strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("shellWords(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
