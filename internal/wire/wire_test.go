package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysFollowTheSharedLayout(t *testing.T) {
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"exq", []string{"exq:queues", "exq:queue:mail", "exq:queue:backup::n1::mail", "exq:schedule", "exq:retry", "exq:dead"}},
		{"", []string{"queues", "queue:mail", "queue:backup::n1::mail", "schedule", "retry", "dead"}},
		{"{exq}", []string{"{exq}:queues", "{exq}:queue:mail", "{exq}:queue:backup::n1::mail", "{exq}:schedule", "{exq}:retry", "{exq}:dead"}},
	} {
		k := NewKeys(tc.ns)
		got := []string{k.Queues(), k.Queue("mail"), k.Backup("n1", "mail"), k.Schedule(), k.Retry(), k.Dead()}
		assert.Equal(t, tc.want, got, "namespace %q", tc.ns)
	}
}

func TestFormatTimeHasMicrosecondPrecision(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Unix(1796010415, 667948000), "1796010415.667948"},
		{time.Unix(1796010415, 667948999), "1796010415.667948"},
		{time.Unix(1796010415, 0), "1796010415.000000"},
		{time.Unix(1796010415, 1000), "1796010415.000001"},
		{time.Unix(0, 0), "0.000000"},
	} {
		assert.Equal(t, tc.want, FormatTime(tc.t))
	}
	sec := 1796010415.667948
	assert.Equal(t, time.Unix(1796010415, 667948000), ParseTime(sec))
	assert.True(t, ParseTime(0).IsZero())
}

func TestNewJobEncodesExactlyWireSection2(t *testing.T) {
	at := time.Unix(1796010415, 667948000)
	got := NewJob{Class: "MyWorker", Args: json.RawMessage(`[1,"a"]`), Queue: "default", JID: "j1",
		EnqueuedAt: at, CreatedAt: at, Retry: 25}.Encode()
	assert.Equal(t, `{"class":"MyWorker","args":[1,"a"],"queue":"default","jid":"j1","enqueued_at":1796010415.667948,"created_at":1796010415.667948,"retry":25}`, got)
	assert.True(t, json.Valid([]byte(got)))
	// HTML characters stay as written, so Ruby and Elixir readers see the same text.
	got = NewJob{Class: "A<B>&C", Args: json.RawMessage(`[]`), Queue: "q\"x", JID: "j"}.Encode()
	assert.Contains(t, got, `"class":"A<B>&C"`)
	assert.Contains(t, got, `"queue":"q\"x"`)
}

func TestDecodeHeaderSpotsPoisonMessages(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		poison bool
	}{
		{`{"class":"X","args":[1],"queue":"default","jid":"abc","retry":true}`, false},
		{`{"class":"X"}`, false}, // no args: the empty list
		{`{"class":"X","args":null}`, false},
		{`not json`, true},
		{`[1,2]`, true},
		{`{"args":[]}`, true},
		{`{"class":"","args":[]}`, true},
		{`{"class":5,"args":[]}`, true},
		{`{"class":"X","args":{"a":1}}`, true},
		{`{"class":"X","args":5}`, true},
	} {
		h, err := DecodeHeader(tc.raw)
		if tc.poison {
			assert.True(t, errors.Is(err, ErrPoison), "%s: want poison, got %v", tc.raw, err)
			continue
		}
		require.NoError(t, err, tc.raw)
		assert.Equal(t, "X", h.Class)
		assert.Equal(t, byte('['), h.Args[0], tc.raw)
	}
}

func TestMaxRetriesFollowsExqRules(t *testing.T) {
	for _, tc := range []struct {
		retry string
		want  int
	}{
		{`true`, 25}, {`false`, 0}, {`0`, 0}, {`null`, 0}, {``, 0}, {`3`, 3}, {`3.0`, 3},
		{`-1`, 0}, {`2.5`, 0}, {`"5"`, 0}, {`25`, 25}, {`007`, 7}, {`123456789`, 123456789},
		{`1234567890`, 1234567890}, {`1e2`, 100}, {` 4 `, 4}, {`4x`, 0}, {`+4`, 4},
	} {
		h := Header{Retry: tc.retry}
		assert.Equal(t, tc.want, h.MaxRetries(25), "retry=%s", tc.retry)
	}
}

func TestObjectRewriteKeepsUnknownFieldsByteForByte(t *testing.T) {
	raw := `{"class":"HardWorker","args":[1, 2.50, {"big": 12345678901234567890}],"bid":"b-1","tags":["x","y"],` +
		`"retry":true,"queue":"default","jid":"abc","created_at":1700000000.5,"wrapped":"W","error_message":"old"}`
	o, err := ParseObject(raw)
	require.NoError(t, err)
	o.SetInt("retry_count", 1)
	o.SetString("error_message", "boom <&>")
	assert.True(t, o.Has("bid"))
	assert.False(t, o.Has("failed_at"))
	got := o.String()
	assert.Equal(t, `{"class":"HardWorker","args":[1, 2.50, {"big": 12345678901234567890}],"bid":"b-1","tags":["x","y"],`+
		`"retry":true,"queue":"default","jid":"abc","created_at":1700000000.5,"wrapped":"W","error_message":"boom <&>","retry_count":1}`, got)

	for _, bad := range []string{`[1]`, `nope`, `{"a":1`, `{"a":1}x`} {
		_, err := ParseObject(bad)
		assert.True(t, errors.Is(err, ErrPoison), bad)
	}
}

func TestPoisonWrapperIsValidJSONCarryingTheRawDocument(t *testing.T) {
	raw := "{\"class\": broken \xff"
	doc := Poison(raw, "default", "poison-1", "bad JSON", time.Unix(10, 0))
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(doc), &m))
	assert.Equal(t, PoisonClass, m["class"])
	assert.Equal(t, []any{}, m["args"])
	assert.Equal(t, "default", m["queue"])
	assert.Equal(t, PoisonErrorClass, m["error_class"])
	assert.Equal(t, "bad JSON", m["error_message"])
	assert.Contains(t, m["raw"], "{\"class\": broken")
}

func TestDecodeHeaderMatchesFieldNamesExactly(t *testing.T) {
	h, err := DecodeHeader(`{"class":"Safe","CLASS":"Other","args":[1],"ARGS":[2],"Retry":5}`)
	require.NoError(t, err)
	assert.Equal(t, "Safe", h.Class, "CLASS is another field, as in Ruby and Elixir")
	assert.Equal(t, `[1]`, string(h.Args))
	assert.Empty(t, h.Retry)
	_, err = DecodeHeader(`{"Class":"Evil","args":[]}`)
	assert.ErrorIs(t, err, ErrPoison, "no class for Sidekiq or Exq, so none for us")
}

func TestDecodeHeaderIgnoresOptionalFieldsOfUnexpectedTypes(t *testing.T) {
	h, err := DecodeHeader(`{"class":"W","args":[],"retry_count":"1","enqueued_at":"2024","jid":5,"queue":["a"],` +
		`"error_message":{},"error_class":7,"unique_token":null,"failed_at":true}`)
	require.NoError(t, err, "an odd optional field does not make a runnable job poison")
	assert.Equal(t, "W", h.Class)
	assert.Zero(t, h.Count())
	assert.False(t, h.EnqueuedAt.OK)
	assert.Empty(t, h.JID)
	assert.Empty(t, h.Queue)
	assert.Nil(t, h.ErrorMessage)
	assert.Nil(t, h.ErrorClass)
	assert.False(t, h.FailedAt.OK)
	h, err = DecodeHeader(" {\n \"jid\" : \"a\\\"b\" , \"class\" : \"K\\u00e9\", \"args\" : [ {\"x\":\"}]\"} ] , \"retry_count\" : 2 , \"enqueued_at\": 1.5e3 } ")
	require.NoError(t, err)
	assert.Equal(t, `a"b`, h.JID)
	assert.Equal(t, "Ké", h.Class)
	assert.Equal(t, `[ {"x":"}]"} ]`, string(h.Args))
	assert.Equal(t, 2, h.Count())
	assert.Equal(t, Number{V: 1500, OK: true}, h.EnqueuedAt)
}

func BenchmarkDecodeHeader(b *testing.B) {
	raw := `{"class":"MyApp.Worker","args":[42,"welcome",{"a":[1,2,3]}],"queue":"default","jid":"0b6e8c46-5d3c-4a9c-9a43-77f1b5f3c1b1",` +
		`"enqueued_at":1796010415.667948,"created_at":1796010415.667948,"retry":25,"bid":"b-1","tags":["x"]}`
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeHeader(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNewJIDIsARandomUUIDv4(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ { // crosses several refills of the pool
		j := NewJID()
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, j)
		require.False(t, seen[j], "duplicate jid %s", j)
		seen[j] = true
	}
}

func TestAppendQuoteMatchesQuote(t *testing.T) {
	for _, s := range []string{"", "MyApp.Worker", "Foo::Bar", `a"b`, `back\slash`, "tab\t", "ünï", "<b>&", "\xff", "\u2028"} {
		assert.Equal(t, string(Quote(s)), string(AppendQuote(nil, s)), "%q", s)
	}
}

func TestDecodeHeaderNestingLimitIsEncodingJSONs(t *testing.T) {
	for _, depth := range []int{maxNesting - 1, maxNesting} { // the document's object is one more
		args := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		raw := `{"class":"W","args":` + args + `}`
		_, err := DecodeHeader(raw)
		assert.Equal(t, json.Valid([]byte(raw)), err == nil, "args nested %d deep: %v", depth, err)
	}
}
