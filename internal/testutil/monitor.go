package testutil

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// WriteWatch records, through MONITOR, every command a Redis server runs (from a client or
// from a script) that the server flags as a write and that names a key of one namespace. Reads
// call it to prove they write nothing: a write refused by an ACL may be ignored by its caller
// (a warning), a write seen here cannot.
type WriteWatch struct {
	t      testing.TB
	conn   net.Conn
	admin  *redis.Client
	prefix string
	writes map[string]bool // command names flagged "write"

	mu    sync.Mutex
	seen  []string // the write commands of the namespace seen so far
	marks map[string]chan struct{}
}

// WatchWrites starts watching the server at addr (the default user, no password) for writes
// to keys of namespace ns. The watch ends with the test.
func WatchWrites(t testing.TB, addr, ns string) *WriteWatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = admin.Close() })
	infos, err := admin.Command(ctx).Result()
	if err != nil {
		t.Fatalf("COMMAND: %v", err)
	}
	w := &WriteWatch{t: t, admin: admin, prefix: ns + ":", writes: map[string]bool{}, marks: map[string]chan struct{}{}}
	for name, info := range infos {
		for _, f := range info.Flags {
			if f == "write" {
				w.writes[strings.ToUpper(name)] = true
			}
		}
	}
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	w.conn = conn
	t.Cleanup(func() { _ = conn.Close() })
	rd := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatalf("MONITOR: %v", err)
	}
	if l, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(l, "+OK") {
		t.Fatalf("MONITOR: %q, %v", l, err)
	}
	go w.read(rd)
	return w
}

func (w *WriteWatch) read(rd *bufio.Reader) {
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		args := monitorArgs(strings.TrimRight(l, "\r\n"))
		if len(args) == 0 {
			continue
		}
		name := strings.ToUpper(args[0])
		w.mu.Lock()
		if name == "ECHO" && len(args) == 2 {
			if ch, ok := w.marks[args[1]]; ok {
				close(ch)
				delete(w.marks, args[1])
			}
		}
		if w.writes[name] {
			for _, a := range args[1:] {
				if strings.HasPrefix(a, w.prefix) {
					w.seen = append(w.seen, strings.Join(args, " "))
					break
				}
			}
		}
		w.mu.Unlock()
	}
}

// monitorArgs reads the quoted arguments of a MONITOR line
// (`+1700000000.123456 [0 127.0.0.1:5555] "ZREM" "ns:batches" "id"`).
func monitorArgs(l string) []string {
	i := strings.IndexByte(l, ']')
	if i < 0 {
		return nil
	}
	var args []string
	var b strings.Builder
	in := false
	for j := i + 1; j < len(l); j++ {
		c := l[j]
		switch {
		case !in && c == '"':
			in = true
			b.Reset()
		case in && c == '\\' && j+1 < len(l):
			j++
			switch l[j] {
			case 'x':
				if j+2 < len(l) {
					var v byte
					_, _ = fmt.Sscanf(l[j+1:j+3], "%02x", &v)
					b.WriteByte(v)
					j += 2
				}
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(l[j])
			}
		case in && c == '"':
			in = false
			args = append(args, b.String())
		case in:
			b.WriteByte(c)
		}
	}
	return args
}

// Writes returns the writes to the namespace seen since the watch started (or the last
// Writes): every command the server ran before the call is in it.
func (w *WriteWatch) Writes() []string {
	w.t.Helper()
	mark := uuid.NewString()
	ch := make(chan struct{})
	w.mu.Lock()
	w.marks[mark] = ch
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.admin.Echo(ctx, mark).Err(); err != nil {
		w.t.Fatalf("ECHO: %v", err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		w.t.Fatalf("MONITOR did not show the mark within 10 s")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}
