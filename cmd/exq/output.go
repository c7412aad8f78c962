package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/exqgo/exq"
)

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (c *cli) table(header []string, rows [][]any) error {
	tw := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = fmt.Sprint(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// say reports what a command did: v as JSON, or the sentence for people.
func (c *cli) say(v any, format string, a ...any) error {
	if c.json {
		return c.printJSON(v)
	}
	_, err := fmt.Fprintf(c.out, format+"\n", a...)
	return err
}

func jobJSON(r exq.JobRecord) map[string]any {
	m := map[string]any{"raw": r.Raw}
	if !r.At.IsZero() {
		m["at"] = r.At.UTC().Format(time.RFC3339Nano)
	}
	j, err := r.Job()
	if err != nil {
		m["decode_error"] = err.Error()
		return m
	}
	m["jid"], m["class"], m["queue"], m["args"] = j.JID, j.Class, j.Queue, j.Args
	m["retry_count"] = j.RetryCount
	if j.ErrorMessage != "" {
		m["error_message"] = j.ErrorMessage
	}
	return m
}

// records prints job records; withAt adds the set's time column.
func (c *cli) records(recs []exq.JobRecord, withAt bool) error {
	if c.json {
		out := make([]map[string]any, len(recs))
		for i, r := range recs {
			out[i] = jobJSON(r)
		}
		return c.printJSON(out)
	}
	header := []string{"JID", "CLASS", "QUEUE", "ARGS", "RETRIES", "ERROR"}
	if withAt {
		header = append([]string{"AT"}, header...)
	}
	rows := make([][]any, len(recs))
	for i, r := range recs {
		row := []any{"?", "<undecodable>", "", cut(r.Raw, 60), "", ""}
		if j, err := r.Job(); err == nil {
			row = []any{j.JID, j.Class, j.Queue, cut(string(j.Args), 60), j.RetryCount, cut(j.ErrorMessage, 60)}
		}
		if withAt {
			row = append([]any{r.At.UTC().Format(time.RFC3339)}, row...)
		}
		rows[i] = row
	}
	return c.table(header, rows)
}

func cut(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// progress draws a bar on w for bulk operations.
type progress struct {
	w     io.Writer
	label string
	drawn bool
}

func newProgress(w io.Writer, label string) *progress { return &progress{w: w, label: label} }

func (p *progress) update(done, total int) {
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	filled := int(frac * width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3.0f%%", p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, total, frac*100)
	p.drawn = true
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
