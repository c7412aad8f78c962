package bind

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// bindSeeds are args texts for the fuzz corpus and the unit tests: the edge cases where a
// hand-written decoder most easily parts from encoding/json.
var bindSeeds = []string{
	// arrays and splitting
	`[12345,67890]`, `[]`, `[ ]`, ` [ 1 , 2 ] `, "\t[\n1\r,\n2]\n", `null`, ` null `, `nul`, `nulll`,
	`[1,]`, `[,1]`, `[1 2]`, `[1,,2]`, `[`, `]`, `[1`, `[1]]`, `[1] x`, `[1]]`, `{}`, `{"a":1}`,
	`1`, `"x"`, `true`, ``, ` `, `[null]`, `[[]]`, `[{}]`, `[[1,[2,[3]]],{"a":{"b":[]}}]`,
	`[{"a":1,}]`, `[{"a" 1}]`, `[{1:2}]`, `[{"a":1 "b":2}]`, `[[1,]]`, `[{"a":}]`, `[{,}]`,
	"\ufeff[1]", "[1]\x00", `[1]/**/`, `[nan]`, `[NaN]`, `[Infinity]`, `[-Infinity]`, `[undefined]`,
	// numbers
	`[0]`, `[-0]`, `[-0.0]`, `[0.0]`, `[01]`, `[00]`, `[-]`, `[+1]`, `[1.]`, `[.5]`, `[1.5]`, `[-1.5]`,
	`[1e3]`, `[1E3]`, `[1e+3]`, `[1e-3]`, `[1e]`, `[1e+]`, `[1.0e3]`, `[0e0]`, `[-0e-0]`, `[1e400]`,
	`[-1e400]`, `[1e-400]`, `[3.4028235e38]`, `[3.4028236e38]`, `[3.5e38]`, `[-3.5e38]`, `[1e-46]`,
	`[1.401298464324817e-45]`, `[4.9e-324]`, `[1.7976931348623157e308]`, `[1.7976931348623159e308]`,
	`[127]`, `[128]`, `[-128]`, `[-129]`, `[255]`, `[256]`, `[32767]`, `[32768]`, `[-32768]`,
	`[-32769]`, `[65535]`, `[65536]`, `[2147483647]`, `[2147483648]`, `[-2147483648]`,
	`[-2147483649]`, `[4294967295]`, `[4294967296]`, `[9223372036854775807]`,
	`[9223372036854775808]`, `[-9223372036854775808]`, `[-9223372036854775809]`,
	`[18446744073709551615]`, `[18446744073709551616]`, `[99999999999999999999]`,
	`[12345678901234567890]`, `[9007199254740993]`, `[0.1]`, `[100000000000000000000000000000000000000000]`,
	`[1.00000000000000000000000000000000000000000000001]`, `[-1]`, `[-1,-2,-3]`,
	// strings
	`[""]`, `["a"]`, `["\u00e9"]`, `["\u00E9"]`, `["é"]`, `["\ud83d\ude00"]`, `["\uD83D\uDE00"]`,
	`["\ud83d"]`, `["\ude00"]`, `["\ud83dx"]`, `["\ud83d\u0041"]`, `["\ud83d\ud83d\ude00"]`,
	`["\ude00\ud83d"]`, `["\uD800\uDC000"]`, `["\ud83d\ude00\ud83d\ude00x"]`, `["\ud83d\ude00\n"]`, `["\u0000"]`, `["\u"]`, `["\u12"]`, `["\u12g4"]`, `["\x41"]`, `["\'"]`,
	`["\a"]`, `["\"\\\/\b\f\n\r\t"]`, `["\\u00e9"]`, "[\"\t\"]", "[\"\n\"]", "[\"\x1f\"]", "[\"\x7f\"]",
	"[\"\xff\"]", "[\"\xc3\"]", "[\"a\xc3\xa9\xffb\"]", "[\"\xed\xa0\x80\"]", "[\"\xef\xbf\xbd\"]",
	"[\"\xf4\x90\x80\x80\"]", `["unterminated]`, `["a" "b"]`, `["1"]`, `["1.5"]`, `["-0"]`, `["1e3"]`,
	`[" 1"]`, `["01"]`, `["true"]`, `["null"]`, `[""]`,
	// literals
	`[true]`, `[false]`, `[True]`, `[tru]`, `[truex]`, `[falsey]`, `[nULL]`,
	// mixed and nested
	`[42,"welcome",true,2.5,null]`, `[["a","b"]]`, `[["a",null,"c"]]`, `[[null]]`, `[[null,null,null,null,null]]`,
	`[["a",1]]`, `[["a",["b"]]]`, `[["a",{}]]`, `[[true]]`, `[[ "a" , "b" ]]`, `[["\u00e9","\ud83d"]]`,
	`[{"id":12345678901234567890}]`, `[{"a":[1,2,{"b":null}]}]`, `[[1,2,3]]`, `[[],[]]`,
	`[{"a":"\u00e9"}]`, `[{"":""}]`, `[[[[[[[[[[]]]]]]]]]]`,
	`[1,2,3,4,5,6,7,8,9,10,11,12]`,
}

// bindDeepSeeds nest to encoding/json's depth limit (10000, the args array included): unit
// test cases only, as the fuzzer crawls on texts this long.
var bindDeepSeeds = []string{
	strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	"[" + strings.Repeat(`{"a":`, 9998) + "1" + strings.Repeat("}", 9998) + "]",
	"[" + strings.Repeat(`{"a":`, 9999) + "1" + strings.Repeat("}", 9999) + "]",
	"[" + strings.Repeat(`[{"":`, 4999) + "[]" + strings.Repeat("}]", 4999) + "]",
	"[" + strings.Repeat(`[{"":`, 5000) + "[]" + strings.Repeat("}]", 5000) + "]",
}

// bindDst is a destination type the fast path handles, with the initial values tests
// decode over (null must leave some unchanged, and a []string's backing array is reused).
type bindDst struct {
	name string
	// inits return fresh pointers, each to its own copy of an initial value.
	inits []func() any
	// partial is set for *any: the fast path declines arrays, objects and an interface
	// holding a non-nil pointer, which encoding/json decodes.
	partial bool
}

func bindDsts() []bindDst {
	ptr := func(v any) func() any {
		return func() any {
			p := reflect.New(reflect.TypeOf(v))
			p.Elem().Set(reflect.ValueOf(v))
			return p.Interface()
		}
	}
	zeroAnd := func(v any) []func() any {
		return []func() any{ptr(reflect.Zero(reflect.TypeOf(v)).Interface()), ptr(v)}
	}
	return []bindDst{
		{name: "int", inits: zeroAnd(int(7))},
		{name: "int8", inits: zeroAnd(int8(7))},
		{name: "int16", inits: zeroAnd(int16(7))},
		{name: "int32", inits: zeroAnd(int32(7))},
		{name: "int64", inits: zeroAnd(int64(7))},
		{name: "uint", inits: zeroAnd(uint(7))},
		{name: "uint8", inits: zeroAnd(uint8(7))},
		{name: "uint16", inits: zeroAnd(uint16(7))},
		{name: "uint32", inits: zeroAnd(uint32(7))},
		{name: "uint64", inits: zeroAnd(uint64(7))},
		{name: "float32", inits: zeroAnd(float32(7.5))},
		{name: "float64", inits: zeroAnd(7.5)},
		{name: "string", inits: zeroAnd("prev")},
		{name: "bool", inits: zeroAnd(true)},
		{name: "[]string", inits: []func() any{
			func() any { return new([]string) },
			func() any { s := []string{}; return &s },
			func() any { s := []string{"x", "y", "z"}; return &s },
			func() any { // hidden elements past len, which encoding/json exposes
				base := []string{"a", "b", "c", "d"}
				s := base[:1]
				return &s
			},
		}},
		{name: "json.RawMessage", inits: []func() any{
			func() any { return new(json.RawMessage) },
			func() any { m := make(json.RawMessage, 3, 64); copy(m, "old"); return &m },
		}},
		{name: "json.Number", inits: zeroAnd(json.Number("5"))},
		{name: "any", partial: true, inits: []func() any{
			func() any { return new(any) },
			func() any { var v any = 5; return &v },
			func() any { var v any = "s"; return &v },
			func() any { var v any = (*int)(nil); return &v },
			func() any { var v any = new(int); return &v },
			func() any { var v any = new(*int); return &v },
		}},
	}
}

// sameValue reports whether two decoded destinations hold the same value, -0 and the type
// of an interface's value included.
func sameValue(a, b any) bool {
	if !reflect.DeepEqual(a, b) || show(a) != show(b) {
		return false
	}
	// A []string's backing array must have been written the same way.
	if sa, ok := a.(*[]string); ok {
		sb := b.(*[]string)
		if cap(*sa) != cap(*sb) || !reflect.DeepEqual((*sa)[:cap(*sa)], (*sb)[:cap(*sb)]) {
			return false
		}
	}
	return true
}

// show prints what the destination pointer p points to.
func show(p any) string {
	if p == nil {
		return "<nil>"
	}
	return showValue(reflect.ValueOf(p).Elem())
}

// showValue prints v, and what its pointers point to rather than their addresses.
func showValue(v reflect.Value) string {
	switch {
	case v.Kind() == reflect.Interface && !v.IsNil():
		return fmt.Sprintf("%s(%s)", v.Elem().Type(), showValue(v.Elem()))
	case v.Kind() == reflect.Pointer && !v.IsNil():
		return "&" + showValue(v.Elem())
	}
	return fmt.Sprintf("%#v", v.Interface())
}

// short abbreviates a long text in a failure message.
func short[T string | []byte](s T) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q…(%d bytes)", s[:200], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func isComposite(raw []byte) bool { return raw[0] == '[' || raw[0] == '{' }

// checkBindArg decodes the arg raw (valid JSON as scanArgs splits it) into each destination
// with the fast path and with encoding/json, and fails t on any difference.
func checkBindArg(t *testing.T, raw []byte) {
	t.Helper()
	for _, d := range bindDsts() {
		for k, init := range d.inits {
			fast, ref, orig := init(), init(), init()
			handled := bindArg(raw, fast)
			refErr := Decode(raw, ref)
			if handled {
				if refErr != nil {
					t.Fatalf("%s into *%s (init %d): fast path took it as %s, encoding/json fails: %v", short(raw), d.name, k, show(fast), refErr)
				}
				if !sameValue(fast, ref) {
					t.Fatalf("%s into *%s (init %d): fast path gives %s, encoding/json %s", short(raw), d.name, k, show(fast), show(ref))
				}
				continue
			}
			if !sameValue(fast, orig) {
				t.Fatalf("%s into *%s (init %d): fast path declined but changed %s to %s", short(raw), d.name, k, show(orig), show(fast))
			}
			if refErr == nil {
				heldPointer := false
				if p, ok := orig.(*any); ok && *p != nil {
					v := reflect.ValueOf(*p)
					heldPointer = v.Kind() == reflect.Pointer && !v.IsNil()
				}
				if !d.partial || !isComposite(raw) && !heldPointer {
					t.Fatalf("%s into *%s (init %d): fast path declined, encoding/json gives %s", short(raw), d.name, k, show(ref))
				}
			}
		}
	}
}

// bindReference is Job.Bind as it was before the fast path: encoding/json all the way.
func bindReference(j *testJob, dst ...any) error {
	return job{Class: j.Class, Args: j.Args}.bindSlow(dst)
}

// checkBind compares scanArgs with encoding/json's split of args, each arg through
// checkBindArg, and Bind with bindReference for destinations picked by sel.
func checkBind(t *testing.T, args string, sel uint8) {
	t.Helper()
	var ref []json.RawMessage
	refErr := json.Unmarshal([]byte(args), &ref)
	spans, ok := scanArgs([]byte(args), nil)
	if ok != (refErr == nil) {
		t.Fatalf("%s: scanArgs ok=%v, json.Unmarshal: %v", short(args), ok, refErr)
	}
	if !ok {
		return
	}
	if len(spans) != len(ref) {
		t.Fatalf("%s: scanArgs finds %d args, json.Unmarshal %d", short(args), len(spans), len(ref))
	}
	for i, s := range spans {
		raw := []byte(args[s.start:s.end])
		if string(raw) != string(ref[i]) {
			t.Fatalf("%s: arg %d is %s, json.Unmarshal has %s", short(args), i, short(raw), short([]byte(ref[i])))
		}
		checkBindArg(t, raw)
	}

	// Whole Binds: same error (to the letter) and same values.
	dsts := bindDsts()
	n := len(spans)
	if sel&0x80 != 0 {
		n++ // a count mismatch
	}
	fast, want := make([]any, n), make([]any, n)
	for i := range n {
		d := dsts[(int(sel&0x7f)+i)%len(dsts)]
		init := d.inits[(int(sel)+i)%len(d.inits)]
		fast[i], want[i] = init(), init()
		if sel&0x40 != 0 && i == 0 {
			fast[i], want[i] = nil, nil // a skipped arg
		}
	}
	j := &testJob{Class: "W", Args: json.RawMessage(args)}
	err, wantErr := j.Bind(fast...), bindReference(j, want...)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%s: Bind: %s, encoding/json: %s", short(args), short(fmt.Sprint(err)), short(fmt.Sprint(wantErr)))
	}
	if err == nil {
		for i := range fast {
			if !sameValue(fast[i], want[i]) {
				t.Fatalf("%s: Bind arg %d: %s, encoding/json %s", short(args), i, show(fast[i]), show(want[i]))
			}
		}
	}
}

// FuzzBindMatchesEncodingJSON checks Bind's fast path against encoding/json on random args
// texts: the split of the array, and for each arg and each destination type the fast path
// handles, success or failure and the value stored; then whole Binds, errors included.
func FuzzBindMatchesEncodingJSON(f *testing.F) {
	for i, s := range bindSeeds {
		f.Add(s, uint8(i))
	}
	f.Fuzz(func(t *testing.T, args string, sel uint8) {
		if len(args) > 4096 {
			t.Skip("long texts are the unit tests' (bindDeepSeeds)")
		}
		checkBind(t, args, sel)
		checkBind(t, "["+args+"]", sel) // the text as one arg
	})
}
