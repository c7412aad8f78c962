package wire

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// BacktraceLimit interprets a job's "backtrace" field as Sidekiq 6 does: how many lines of a
// failure's backtrace go into error_backtrace. true means all (-1), a number N the first N,
// and false, null or a missing field none (ok false). A numeric string counts as its number
// (Ruby's to_i); anything else Ruby would call true keeps every line.
func BacktraceLimit(raw json.RawMessage) (limit int, ok bool) {
	v := strings.TrimSpace(string(raw))
	switch {
	case v == "" || v == "false" || v == "null":
		return 0, false
	case v == "true":
		return -1, true
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, true
		}
		return int(min(f, 1e6)), true
	case v[0] == '"':
		s := strings.TrimSpace(unquote(v))
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		n, _ := strconv.Atoi(s[:min(end, 7)])
		return n, true
	}
	return -1, true
}

// CompressBacktrace renders backtrace lines as Sidekiq stores error_backtrace: the JSON array,
// zlib-deflated, in base64. Sidekiq's Web UI (and Sidekiq::SortedEntry#error_backtrace) reads
// it back with Base64.decode64 and Zlib::Inflate.inflate.
func CompressBacktrace(lines []string) string {
	if lines == nil {
		lines = []string{}
	}
	doc, _ := Marshal(lines) // strings always encode
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	_, _ = w.Write(doc) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// DecompressBacktrace reads an error_backtrace written by CompressBacktrace or by Sidekiq
// (whose base64 has line breaks), or one stored as a plain JSON array by older versions.
func DecompressBacktrace(raw json.RawMessage) ([]string, error) {
	var lines []string
	if json.Unmarshal(raw, &lines) == nil {
		return lines, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	z, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, err
	}
	r, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	err = json.NewDecoder(r).Decode(&lines)
	return lines, err
}

// PanicBacktrace is the stack where a panic happened (the callers' pcs, or else the text of
// debug.Stack), one frame per line in Ruby's format ("file:line:in `function'"), which
// Sidekiq's Web UI shows, innermost first. Frames of the recovery itself are left out.
func PanicBacktrace(pcs []uintptr, stack []byte) []string {
	var lines []string
	if len(pcs) > 0 {
		frames := runtime.CallersFrames(pcs)
		for {
			f, more := frames.Next()
			lines = append(lines, fmt.Sprintf("%s:%d:in `%s'", f.File, f.Line, f.Function))
			if f.Function == "runtime.gopanic" {
				lines = lines[:0] // what came before is the recovery
			}
			if !more {
				break
			}
		}
	} else {
		// Only the text of debug.Stack: "function(args)" then "\tfile:line +0x…".
		text := strings.Split(string(stack), "\n")
		for i := 1; i < len(text); i++ {
			if !strings.HasPrefix(text[i], "\t") {
				continue
			}
			fn := text[i-1]
			if j := strings.LastIndexByte(fn, '('); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimPrefix(text[i], "\t")
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			lines = append(lines, loc+":in `"+fn+"'")
			if fn == "panic" {
				lines = lines[:0]
			}
		}
	}
	// Runtime helpers between the panic and the code that caused it (a nil map write, an
	// index out of range), and the goroutine's exit, say nothing about the job.
	for len(lines) > 0 && strings.Contains(lines[0], ":in `runtime.") {
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], ":in `runtime.goexit'") {
		lines = lines[:n-1]
	}
	return lines
}
