package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// EncodeArgs renders args as a JSON array. nil is the empty list.
func EncodeArgs(args any) (json.RawMessage, error) {
	if args == nil {
		return json.RawMessage("[]"), nil
	}
	if list, ok := args.([]any); ok {
		if b, ok := AppendSimpleArgs(make([]byte, 0, 16*len(list)+2), list); ok {
			return b, nil
		}
	}
	if raw, ok := args.(json.RawMessage); ok && !json.Valid(raw) {
		return nil, fmt.Errorf("args: invalid JSON %q", raw)
	}
	b, err := Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("args cannot be encoded as JSON: %v", err)
	}
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return json.RawMessage("[]"), nil
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, fmt.Errorf("args must be a list (a slice or array), got %s", describe(args))
	}
	return b, nil
}

// AppendSimpleArgs renders the usual args (strings, ints, bools, nil, finite floats) without
// reflection, as encoding/json would; ok is false when some arg needs encoding/json.
func AppendSimpleArgs(b []byte, list []any) (_ []byte, ok bool) {
	b = append(b, '[')
	for i, a := range list {
		if i > 0 {
			b = append(b, ',')
		}
		switch v := a.(type) {
		case string:
			b = AppendQuote(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case bool:
			b = strconv.AppendBool(b, v)
		case nil:
			b = append(b, "null"...)
		default:
			return nil, false
		}
	}
	return append(b, ']'), true
}

// describe names what args were, for the error of args that are not a list.
func describe(v any) string {
	if _, ok := v.(json.RawMessage); ok {
		return "JSON that is not an array"
	}
	return reflect.TypeOf(v).String()
}
