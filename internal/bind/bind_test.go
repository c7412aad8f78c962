package bind

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every seed of the fuzz test, checked on each run: the split against encoding/json's, each
// arg into each fast-path type against encoding/json, whole Binds (errors to the letter).
func TestBindMatchesEncodingJSONOnEdgeCases(t *testing.T) {
	t.Parallel()
	for i, s := range append(bindSeeds[:len(bindSeeds):len(bindSeeds)], bindDeepSeeds...) {
		for sel := range 4 {
			checkBind(t, s, uint8(i*4+sel)|uint8(sel&1)<<7)
			checkBind(t, "["+s+"]", uint8(i+sel))
		}
	}
}

// The edge cases with the outcome spelled out: what encoding/json does, so what Bind does.
func TestBindEdgeCases(t *testing.T) {
	t.Parallel()
	type tc struct {
		arg  string
		dst  func() any // a fresh destination with its initial value
		want any        // the value after a successful Bind, or errBindFails
	}
	i := func(v int) func() any { return func() any { return &v } }
	i8 := func(v int8) func() any { return func() any { return &v } }
	u := func(v uint) func() any { return func() any { return &v } }
	u8 := func(v uint8) func() any { return func() any { return &v } }
	i64 := func(v int64) func() any { return func() any { return &v } }
	u64 := func(v uint64) func() any { return func() any { return &v } }
	f64 := func(v float64) func() any { return func() any { return &v } }
	f32 := func(v float32) func() any { return func() any { return &v } }
	str := func(v string) func() any { return func() any { return &v } }
	bl := func(v bool) func() any { return func() any { return &v } }
	ss := func(v []string) func() any { return func() any { return &v } }
	an := func(v any) func() any { return func() any { return &v } }
	fail := any(errBindFails)
	for _, c := range []tc{
		// integers: JSON integers only, in range; null leaves the value
		{`12345`, i(0), 12345},
		{`-0`, i(5), 0},
		{`null`, i(5), 5},
		{`1e3`, i(0), fail},
		{`1.0`, i(0), fail},
		{`1.5`, i(0), fail},
		{`"1"`, i(0), fail},
		{`true`, i(0), fail},
		{`[1]`, i(0), fail},
		{`{}`, i(0), fail},
		{`127`, i8(0), int8(127)},
		{`128`, i8(0), fail},
		{`-128`, i8(0), int8(-128)},
		{`-129`, i8(0), fail},
		{`9223372036854775807`, i64(0), int64(9223372036854775807)},
		{`9223372036854775808`, i64(0), fail},
		{`-9223372036854775808`, i64(0), int64(-9223372036854775808)},
		{`12345678901234567890`, i64(0), fail},
		{`255`, u8(0), uint8(255)},
		{`256`, u8(0), fail},
		{`-0`, u(5), fail}, // strconv.ParseUint takes no sign
		{`-1`, u(5), fail},
		{`18446744073709551615`, u64(0), uint64(18446744073709551615)},
		{`18446744073709551616`, u64(0), fail},
		{`null`, u64(7), uint64(7)},
		// floats
		{`1e3`, f64(0), 1000.0},
		{`-0`, f64(1), negZero()},
		{`0.1`, f32(0), float32(0.1)},
		{`1e400`, f64(0), fail},
		{`3.5e38`, f32(0), fail},
		{`1e-400`, f64(1), 0.0},
		{`null`, f64(2.5), 2.5},
		{`"1.5"`, f64(0), fail},
		// strings: escapes resolved, broken UTF-16 and UTF-8 replaced
		{`"welcome"`, str(""), "welcome"},
		{`"\u00e9"`, str(""), "é"},
		{`"\ud83d\ude00"`, str(""), "😀"},
		{`"\ud83d\ude00x\ud83d\ude00\n"`, str(""), "😀x😀\n"},
		{`"\ud83d"`, str(""), "\ufffd"},
		{`"\ud83dx"`, str(""), "\ufffdx"},
		{`"\ud83d\u0041"`, str(""), "\ufffdA"},
		{`"\ude00\ud83d"`, str(""), "\ufffd\ufffd"},
		{"\"a\xffb\"", str(""), "a\ufffdb"},
		{"\"\xed\xa0\x80\"", str(""), "\ufffd\ufffd\ufffd"},
		{`"\"\\\/\b\f\n\r\t"`, str(""), "\"\\/\b\f\n\r\t"},
		{`null`, str("prev"), "prev"},
		{`1`, str(""), fail},
		{`true`, str(""), fail},
		// bools
		{`true`, bl(false), true},
		{`false`, bl(true), false},
		{`null`, bl(true), true},
		{`1`, bl(false), fail},
		{`"true"`, bl(false), fail},
		// []string: null is nil, [] is empty, a null element leaves its element
		{`["a","b"]`, ss(nil), []string{"a", "b"}},
		{`null`, ss([]string{"x"}), []string(nil)},
		{`[]`, ss(nil), []string{}},
		{`["a",null]`, ss([]string{"x", "y", "z"}), []string{"a", "y"}},
		{`["a",1]`, ss(nil), fail},
		{`["a",["b"]]`, ss(nil), fail},
		{`"a"`, ss(nil), fail},
		// any: json.Number for numbers (UseNumber), nil for null
		{`12345678901234567890`, an(nil), json.Number("12345678901234567890")},
		{`-0`, an(nil), json.Number("-0")},
		{`"é"`, an(nil), "é"},
		{`true`, an(nil), true},
		{`null`, an(5), nil},
		{`[1,"a"]`, an(nil), []any{json.Number("1"), "a"}},
		{`{"id":1}`, an(nil), map[string]any{"id": json.Number("1")}},
		// RawMessage and Number
		{`null`, func() any { return new(json.RawMessage) }, json.RawMessage("null")},
		{`{"a": [1, 2]}`, func() any { return new(json.RawMessage) }, json.RawMessage(`{"a": [1, 2]}`)},
		{`1e3`, func() any { return new(json.Number) }, json.Number("1e3")},
		{`"1e3"`, func() any { return new(json.Number) }, json.Number("1e3")},
		{`"1e"`, func() any { return new(json.Number) }, fail},
		{`""`, func() any { return new(json.Number) }, fail},
	} {
		for _, args := range []string{"[" + c.arg + "]", " [ " + c.arg + " ] "} {
			dst := c.dst()
			err := (&testJob{Class: "W", Args: json.RawMessage(args)}).Bind(dst)
			ref := c.dst()
			refErr := Decode(json.RawMessage(c.arg), ref)
			if c.want == errBindFails {
				assert.Error(t, err, "%s into %T", args, dst)
				assert.Error(t, refErr, "encoding/json: %s into %T", args, dst)
				continue
			}
			if assert.NoError(t, err, "%s into %T", args, dst) {
				assert.Equal(t, show(ref), show(dst), "%s into %T: as encoding/json", args, dst)
				assert.Equal(t, c.want, derefAny(dst), "%s into %T", args, dst)
			}
		}
	}
}

func negZero() float64 { return -1 * zero }

var zero = 0.0

// errBindFails marks the edge cases where encoding/json, and so Bind, fails.
var errBindFails = errors.New("fails")

func derefAny(p any) any {
	switch p := p.(type) {
	case *int:
		return *p
	case *int8:
		return *p
	case *uint:
		return *p
	case *uint8:
		return *p
	case *int64:
		return *p
	case *uint64:
		return *p
	case *float64:
		return *p
	case *float32:
		return *p
	case *string:
		return *p
	case *bool:
		return *p
	case *[]string:
		return *p
	case *any:
		return *p
	case *json.RawMessage:
		return *p
	case *json.Number:
		return *p
	}
	panic(p)
}

// The common args take the fast path: no reflection, and no allocation but the strings.
func TestBindFastPathTakesCommonArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		arg string
		dst any
	}{
		{`12345`, new(int)}, {`-7`, new(int64)}, {`7`, new(int32)}, {`7`, new(int16)}, {`7`, new(int8)},
		{`7`, new(uint)}, {`7`, new(uint64)}, {`7`, new(uint32)}, {`7`, new(uint16)}, {`7`, new(uint8)},
		{`2.5`, new(float64)}, {`2.5`, new(float32)}, {`1e3`, new(float64)}, {`"s"`, new(string)},
		{`"\u00e9"`, new(string)}, {`true`, new(bool)}, {`["a","b"]`, new([]string)},
		{`{"a":1}`, new(json.RawMessage)}, {`12`, new(json.Number)}, {`12`, new(any)},
		{`"s"`, new(any)}, {`null`, new(any)}, {`false`, new(any)}, {`null`, new(int)},
	} {
		assert.True(t, bindArg([]byte(c.arg), c.dst), "%s into %T", c.arg, c.dst)
	}

	// Declined: everything else goes to encoding/json.
	type named int
	var anyPtr any = new(int)
	for _, c := range []struct {
		arg string
		dst any
	}{
		{`1`, new(named)}, {`{}`, new(struct{})}, {`{}`, new(map[string]any)}, {`1`, new(*int)},
		{`[1]`, new([]int)}, {`[1]`, new(any)}, {`{}`, new(any)}, {`1`, &anyPtr}, {`1`, (*int)(nil)},
		{`"s"`, (*string)(nil)}, {`1`, 1}, {`"AQ=="`, new([]byte)},
	} {
		assert.False(t, bindArg([]byte(c.arg), c.dst), "%s into %T", c.arg, c.dst)
	}
}

func TestBindTwoIntsDoesNotAllocate(t *testing.T) {
	// Serial: testing.AllocsPerRun counts every goroutine's allocations (and panics in a parallel test).
	j := &testJob{Class: "W", Args: json.RawMessage(`[12345,67890]`)}
	var x, y int
	allocs := testing.AllocsPerRun(100, func() {
		if err := j.Bind(&x, &y); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, []int{12345, 67890}, []int{x, y})

	// More args than bindSpans still split right.
	args := make([]string, 3*bindSpans)
	dst := make([]any, len(args))
	got := make([]int, len(args))
	for i := range args {
		args[i] = strconv.Itoa(i * i)
		dst[i] = &got[i]
	}
	j = &testJob{Class: "W", Args: json.RawMessage("[" + strings.Join(args, ", ") + "]")}
	require.NoError(t, j.Bind(dst...))
	for i := range got {
		assert.Equal(t, i*i, got[i])
	}
}

// idArg decodes from a string or a number, with its own UnmarshalJSON.
type idArg struct{ s string }

func (a *idArg) UnmarshalJSON(b []byte) error { a.s = "json:" + string(b); return nil }

// upperArg is a TextUnmarshaler.
type upperArg string

func (a *upperArg) UnmarshalText(b []byte) error {
	*a = upperArg(strings.ToUpper(string(b)))
	return nil
}

// strictInt is an int whose UnmarshalJSON refuses negatives: the method must be called.
type strictInt int

func (n *strictInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.Atoi(string(b))
	if err != nil || v < 0 {
		return errors.New("strictInt: not a natural number")
	}
	*n = strictInt(v)
	return nil
}

// Destinations with UnmarshalJSON or UnmarshalText, structs, maps and pointers to pointers
// decode through encoding/json as before.
func TestBindKeepsEncodingJSONForOtherDestinations(t *testing.T) {
	t.Parallel()
	type payload struct {
		UserID int    `json:"user_id"`
		Tags   []any  `json:"tags"`
		Name   string `json:"name"`
	}
	var (
		id   idArg
		up   upperArg
		n    strictInt
		p    payload
		m    map[string]int
		pp   *int
		held     = 0
		anyP any = &held
	)
	j := &testJob{Class: "W", Args: json.RawMessage(`[ 42 , "abc", 7, {"user_id":1,"tags":[2,"x"],"name":"ada"}, {"a":1}, 9, 11 ]`)}
	require.NoError(t, j.Bind(&id, &up, &n, &p, &m, &pp, &anyP))
	assert.Equal(t, "json:42", id.s)
	assert.Equal(t, upperArg("ABC"), up)
	assert.Equal(t, strictInt(7), n)
	assert.Equal(t, payload{UserID: 1, Tags: []any{json.Number("2"), "x"}, Name: "ada"}, p)
	assert.Equal(t, map[string]int{"a": 1}, m)
	require.NotNil(t, pp)
	assert.Equal(t, 9, *pp)
	assert.Equal(t, 11, held, "an interface holding a pointer decodes through it")

	err := (&testJob{Class: "W", Args: json.RawMessage(`[-1]`)}).Bind(&n)
	assert.ErrorContains(t, err, "strictInt: not a natural number")
}

// Errors read as they did: the same conditions, the same words.
func TestBindErrors(t *testing.T) {
	t.Parallel()
	var x int
	var s string
	for _, c := range []struct {
		args string
		dst  []any
		want string
	}{
		{`[1,2]`, []any{&x}, "exq: bind W: job has 2 args, want 1"},
		{`null`, []any{&x}, "exq: bind W: job has 0 args, want 1"},
		{`[1,]`, []any{&x}, "exq: bind W: args are not a JSON array: invalid character ']' looking for beginning of value"},
		{`{"a":1}`, []any{&x}, "exq: bind W: args are not a JSON array: json: cannot unmarshal object into Go value of type []json.RawMessage"},
		{``, []any{&x}, "exq: bind W: args are not a JSON array: unexpected end of JSON input"},
		{`["x"]`, []any{&x}, `exq: bind W: arg 0 ("x"): json: cannot unmarshal string into Go value of type int`},
		{`[1, 1e3]`, []any{nil, &x}, `exq: bind W: arg 1 (1e3): json: cannot unmarshal number 1e3 into Go value of type int`},
		{`[1]`, []any{&s}, `exq: bind W: arg 0 (1): json: cannot unmarshal number into Go value of type string`},
		{`[1]`, []any{x}, `exq: bind W: arg 0 (1): json: Unmarshal(non-pointer int)`},
		{`[1]`, []any{(*int)(nil)}, `exq: bind W: arg 0 (1): json: Unmarshal(nil *int)`},
	} {
		j := &testJob{Class: "W", Args: json.RawMessage(c.args)}
		err := j.Bind(c.dst...)
		require.Error(t, err, c.args)
		assert.Equal(t, c.want, err.Error(), c.args)
		assert.Equal(t, bindReference(j, c.dst...).Error(), err.Error(), c.args)
	}
}

// testJob is the part of an exq.Job that Bind reads; its Bind is Job.Bind.
type testJob struct {
	Class string
	Args  json.RawMessage
}

func (j *testJob) Bind(dst ...any) error { return Args(j.Class, j.Args, dst) }
