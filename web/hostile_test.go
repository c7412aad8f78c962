package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil/hostile"
)

// bigJob is a stored job far over MaxJobBytes (written by some other program).
const bigJobBytes = 8 << 20

// seedHostile stores every hostile fixture and a big job in the retry, schedule and dead sets
// and in queue default; it returns how many members each holds.
func (f *fixture) seedHostile() int {
	f.t.Helper()
	members := []string{hostile.Big("big-1", bigJobBytes)}
	for _, n := range hostile.Names() {
		members = append(members, hostile.Member(n))
	}
	at := time.Now().Add(time.Hour)
	for i, m := range members {
		for _, key := range []string{f.keys.Retry(), f.keys.Schedule(), f.keys.Dead()} {
			f.zadd(key, at.Add(time.Duration(i)*time.Second), m)
		}
		f.push("default", m)
	}
	return len(members)
}

var jobRef = regexp.MustCompile(`name="job" value="([^"]*)"`)

// refs lists the distinct job values of a page's forms.
func refs(body string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range jobRef.FindAllStringSubmatch(body, -1) {
		v := html.UnescapeString(m[1])
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Every member a page lists can be acted on one by one, whatever its bytes (invalid UTF-8,
// NUL, raw line breaks, no jid, 8 MB): forms carry Refs, never the document. Before, Delete of
// such members answered "deleted 0" and an 8 MB job was embedded in the page three times.
func TestEveryListedMemberCanBeActedOnOneByOne(t *testing.T) {
	t.Parallel()
	f := newBigFixture(t, Options{PageSize: 100})
	n := f.seedHostile()
	ctx := context.Background()

	for _, tc := range []struct {
		page, op string
		key      string
		after    func() int64 // members left in the page's set or queue
	}{
		{"/retries", "delete", f.keys.Retry(), func() int64 { return f.rdb.ZCard(ctx, f.keys.Retry()).Val() }},
		{"/scheduled", "kill", f.keys.Schedule(), func() int64 { return f.rdb.ZCard(ctx, f.keys.Schedule()).Val() }},
		{"/dead", "delete", f.keys.Dead(), func() int64 { return f.rdb.ZCard(ctx, f.keys.Dead()).Val() }},
		{"/queues/default", "delete", f.keys.Queue("default"), func() int64 { return f.rdb.LLen(ctx, f.keys.Queue("default")).Val() }},
	} {
		body := f.page(tc.page)
		assert.Less(t, len(body), 1<<20, "%s: %d bytes; the 8 MB job is not in the page", tc.page, len(body))
		rs := refs(body)
		require.Len(t, rs, n, "%s: every member has a form value", tc.page)
		action := tc.page + "/jobs"
		if tc.page == "/queues/default" {
			action = "/queues/default/jobs"
		}
		for i, ref := range rs {
			assert.True(t, exq.IsRef(ref), "%s: %q is a Ref", tc.page, ref)
			code, loc := f.post(action, url.Values{"op": {tc.op}, "job": {ref}})
			require.Equal(t, http.StatusSeeOther, code, "%s %s %d", tc.page, tc.op, i)
			assert.Contains(t, loc, "n=1", "%s: %s of member %d did it", tc.page, tc.op, i)
			assert.EqualValues(t, n-i-1, tc.after(), "%s: one member fewer", tc.page)
		}
	}
}

// Retry Now moves every hostile member that names a queue, by its Ref.
func TestRetryByRefMovesHostileMembersToTheirQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{PageSize: 100})
	ctx := context.Background()
	for _, name := range []string{"invalid-utf8.json", "newline.json", "deep.json", "escapes.json"} {
		f.zadd(f.keys.Retry(), time.Now().Add(time.Hour), hostile.Member(name))
	}
	code, loc := f.post("/retries/jobs", url.Values{"op": {"retry"}, "job": refs(f.page("/retries"))})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Contains(t, loc, "n=4")
	assert.Zero(t, f.rdb.ZCard(ctx, f.keys.Retry()).Val())
	assert.ElementsMatch(t, []string{hostile.Member("invalid-utf8.json"), hostile.Member("newline.json"), hostile.Member("deep.json"),
		hostile.Member("escapes.json")}, f.list(f.keys.Queue("default")), "byte for byte")
}

// A job's page is bounded whatever the document: a 20 KB job nested 9 998 deep made a 200 MB
// page; an 8 MB job is shown cut, with its exact bytes a download.
func TestJobPagesAreBoundedAndTheRawDocumentIsADownload(t *testing.T) {
	t.Parallel()
	f := newBigFixture(t, Options{})
	f.seedHostile()
	for _, path := range []string{"/retries/deep-1", "/queues/default/jobs/deep-1", "/retries/big-1", "/dead/big-1", "/queues/default/jobs/big-1"} {
		body := f.page(path)
		assert.Less(t, len(body), 512<<10, "%s: %d bytes", path, len(body))
		assert.Contains(t, body, "Download the raw document", path)
	}
	body := f.page("/retries/big-1")
	m := regexp.MustCompile(`href="([^"]*\?raw)" download`).FindStringSubmatch(body)
	require.NotNil(t, m)
	res, raw := f.do(httptest.NewRequest(http.MethodGet, html.UnescapeString(m[1]), nil))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "application/octet-stream", res.Header.Get("Content-Type"))
	assert.Contains(t, res.Header.Get("Content-Disposition"), "attachment")
	assert.True(t, hostile.Big("big-1", bigJobBytes) == raw, "byte for byte")

	// A member without a jid has a page too, by its Ref.
	ref := exq.RefOf(hostile.Member("raw-escapes.txt"))
	body = f.page("/dead/" + ref)
	assert.Contains(t, body, "Not a job")
	assert.Contains(t, body, `value="`+ref)
}

// Quiet and Stop reach a node whose identity is not valid UTF-8 (the form carries its bytes
// in base64): before, the signal went to a key no node reads.
func TestQuietReachesANodeWhoseNameIsNotUTF8(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	id := hostile.NodeIdentity
	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Node(id), "info", `{"hostname":"h","pid":1,"concurrency":5,"queues":["default"],"labels":["exq-go"],"busy":0,"quiet":false}`,
		"busy", "0", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Processes(), id).Err())
	body := f.page("/busy")
	m := regexp.MustCompile(`name="node64" value="([^"]*)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "the quiet form names the node")
	code, _ := f.post("/busy/signal", url.Values{"signal": {"quiet"}, "node64": {m[1]}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, []string{"TSTP"}, f.rdb.LRange(ctx, f.keys.Signals(id), 0, -1).Val(), "the node's own signal list")
}

// Names "." and ".." (and names starting with "~") are written so that no browser resolves
// them: /queues/../delete would have been /delete.
func TestDotNamesStayInTheirPathSegment(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push("..", hostile.Member("dots.json"))
	f.push(".", hostile.Member("dots.json"))
	f.push("~x", hostile.Member("dots.json"))
	body := f.page("/queues")
	for _, name := range []string{"..", ".", "~x"} {
		seg := pathSeg(name)
		assert.NotContains(t, seg, ".", name)
		assert.Contains(t, body, `href="/queues/`+seg+`"`, name)
		assert.Contains(t, body, `action="/queues/`+seg+`/pause"`, name)
		page := f.page("/queues/" + seg)
		assert.Contains(t, page, "<h1>Queue "+html.EscapeString(name)+" ", name)
		code, _ := f.post("/queues/"+seg+"/pause", nil)
		require.Equal(t, http.StatusSeeOther, code, name)
		// The job page of jid ".." in queue "..", and its form.
		job := f.page("/queues/" + seg + "/jobs/" + pathSeg(".."))
		assert.Contains(t, job, `action="/queues/`+seg+`/jobs"`, name)
	}
	paused, err := f.api.PausedQueues(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{".", "..", "~x"}, paused)
	// What a browser does with the link: it keeps every segment.
	base, _ := url.Parse("http://h/queues")
	for _, name := range []string{"..", "."} {
		link := "/queues/" + pathSeg(name) + "/delete"
		assert.Equal(t, link, base.ResolveReference(&url.URL{Path: link}).Path, name)
	}
}

// A busy entry of another program whose progress is hostile: the page shows a bounded,
// escaped message, and no progress at all for a fraction out of range.
func TestBusyPageShowsAHostileProgressEscapedAndBounded(t *testing.T) {
	t.Parallel()
	f := newBigFixture(t, Options{})
	ctx := context.Background()
	id := "foreign:1"
	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Node(id), "info", `{"hostname":"h","pid":1,"concurrency":5,"queues":["default"]}`,
		"busy", "2", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Processes(), id).Err())
	entry := func(jid, progress string) string {
		return `{"queue":"default","payload":"{\"class\":\"C\",\"args\":[],\"jid\":\"` + jid + `\"}","run_at":1796010417,"progress":` + progress + `}`
	}
	long := strings.Repeat("<script>", 1<<17) // 1 MiB
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Work(id),
		"r1", entry("hostile-1", `{"fraction":0.5,"message":"`+long+`"}`),
		"r2", entry("hostile-2", `{"fraction":1e300,"message":"<b>huge</b>"}`)).Err())
	body := f.page("/busy")
	assert.Contains(t, body, "hostile-1")
	assert.Contains(t, body, "hostile-2")
	assert.Contains(t, body, `<progress value="0.5" max="1">50%</progress> 50%<br><small>`+strings.Repeat("&lt;script&gt;", exq.MaxProgressMessage/8)+`</small>`)
	assert.NotContains(t, body, "<script>")
	assert.NotContains(t, body, "huge", "no progress for a fraction out of range")
	assert.Less(t, len(body), 100<<10, "the message is cut, not the page made huge")
}
