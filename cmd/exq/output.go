package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/textsafe"
)

// printJSON prints v as --json output: indented for JSONIndentDepth levels, deeper values
// (a job's args) on one line, so the output stays linear in what was read (textsafe.MarshalJSON).
func (a *app) printJSON(v any) error {
	b, err := textsafe.MarshalJSON(v)
	if err != nil {
		return fmt.Errorf("exq: json output: %w", err)
	}
	_, err = a.stdout.Write(b)
	return err
}

// maxCell bounds what a table (or a line for people) shows of one stored string, in runes:
// names, descriptions, jids and the like are short, and one of megabytes must not make the
// output megabytes (--json prints them whole).
const maxCell = 2000

// table prints rows under header, each cell cut to maxCell runes and escaped for a terminal
// (a tab, line break or escape sequence in Redis must not break the table or forge a row).
func (a *app) table(header []string, rows [][]any) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = textsafe.Terminal(clip(fmt.Sprint(v), maxCell))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// shown says how much of a list a page shows, when it is not all of it ("20 of 53000").
func (a *app) shown(offset, n int, total int64) {
	if a.json || (offset == 0 && int64(n) >= total) {
		return
	}
	if n == 0 {
		fmt.Fprintf(a.stdout, "0 of %d (--offset %d is past the end)\n", total, offset)
		return
	}
	fmt.Fprintf(a.stdout, "%d of %d (rows %d-%d; see --limit and --offset)\n", n, total, offset+1, offset+n)
}

// say reports what a command did: v as JSON, or the sentence for people, one line: each
// string in args (a name given, or read from Redis such as a job's queue) is shown escaped
// and cut to maxCell.
func (a *app) say(v any, format string, args ...any) error {
	if a.json {
		return a.printJSON(v)
	}
	safe := make([]any, len(args))
	for i, arg := range args {
		if s, ok := arg.(string); ok {
			arg = textsafe.Terminal(clip(s, maxCell))
		}
		safe[i] = arg
	}
	_, err := fmt.Fprintf(a.stdout, format+"\n", safe...)
	return err
}

// when is t as the tables show it: RFC 3339 in UTC, or "-" when there is none; a stored time
// outside years 0000–9999 is "out of range" (--json writes null for it).
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if !textsafe.InJSONRange(t.UTC()) {
		return outOfRange
	}
	return t.UTC().Format(time.RFC3339)
}

// ago is how long ago t was, rounded for a table ("3m12s"); "-" when there is none.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if !textsafe.InJSONRange(t.UTC()) {
		return outOfRange
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 24*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%dd%s", int(d/(24*time.Hour)), (d % (24 * time.Hour)).Round(time.Minute))
}

// outOfRange stands for a stored time RFC 3339 cannot write (a stored 1e12 seconds is year
// 33658): never a clamped year 292277026596 nor "106751d23h47m0s ago".
const outOfRange = "out of range"

// cut keeps the first n runes of s on one line, with "…" when it cut; it reads no further
// than it keeps (a job may be megabytes).
func cut(s string, n int) string { return strings.ReplaceAll(clip(s, n), "\n", " ") }

// clip keeps the first n runes of s, with "…" when it cut, reading no further than it keeps.
func clip(s string, n int) string {
	i := 0
	for k := 0; i < len(s); k++ {
		if k == n-1 {
			if len(s)-i > utf8.UTFMax || utf8.RuneCountInString(s[i:]) > 1 {
				return s[:i] + "…"
			}
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s
}

// count is n with one or many, whichever fits ("1 job", "2 jobs").
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// jobs is n jobs in words.
func jobs(n int) string { return count(n, "job", "jobs") }
