package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/exqgo/exq/internal/textsafe"
)

// progress reports a bulk operation on stderr: a bar (progressbar) redrawn in place on a
// terminal; elsewhere (a file, a pipe, CI logs) plain lines, at most one a second and always
// the last, so that no \r frame ends up in a file.
type progress struct {
	label string
	bar   *progressbar.ProgressBar // on a terminal
	w     io.Writer                // otherwise
	last  time.Time
	every time.Duration
	done  int
	total int
}

func (a *app) newProgress(label string, total int) *progress {
	label = textsafe.Terminal(label) // it goes to the raw stream on a terminal
	p := &progress{label: label, total: total, w: a.stderr, every: time.Second}
	if a.stderrTTY {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(a.rawStderr), // its own \r and escapes; the label is ours
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(a.rawStderr) }),
		)
	}
	return p
}

// update sets how much is done (and the total, which may change as a set is worked through).
func (p *progress) update(done, total int) {
	p.done, p.total = done, total
	if p.bar != nil {
		if int64(total) != p.bar.GetMax64() {
			p.bar.ChangeMax(total)
		}
		_ = p.bar.Set(done)
		return
	}
	if now := time.Now(); p.last.IsZero() || now.Sub(p.last) >= p.every {
		p.last = now
		p.line()
	}
}

func (p *progress) line() {
	pct := 100
	if p.total > 0 {
		pct = p.done * 100 / p.total
	}
	fmt.Fprintf(p.w, "%s: %d/%d (%d%%)\n", p.label, p.done, p.total, pct)
}

// finish ends the report: the bar completes, or the last line is written.
func (p *progress) finish() {
	if p.bar != nil {
		if !p.bar.IsFinished() {
			_ = p.bar.Exit()
			fmt.Fprintln(p.w)
		}
		return
	}
	p.line()
}
