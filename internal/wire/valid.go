package wire

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

// Valid reports whether s is one valid JSON value with only whitespace around it, exactly as
// encoding/json's Valid does (same grammar, strings may hold any bytes but control characters,
// nesting up to 10 000 deep), without copying s to a []byte.
func Valid(s string) bool {
	i := validValue(s, skipWS(s, 0), 0)
	return i >= 0 && skipWS(s, i) == len(s)
}

// validValue checks the one JSON value that starts at s[i], inside depth open containers,
// and returns the index just past it, or -1. DecodeHeader runs it on each field of a job, so
// that a job is validated and read in one pass.
func validValue(s string, i, depth int) int {
	var small [64]byte // open containers, '[' or '{'; spills to the heap only when deeper
	stack := small[:0]
	for {
		// A value starts at i.
		if i >= len(s) {
			return -1
		}
		switch c := s[i]; {
		case c == '{' || c == '[':
			if depth+len(stack) == maxNesting {
				return -1
			}
			stack = append(stack, c)
			i = skipWS(s, i+1)
			if i < len(s) && (c == '{' && s[i] == '}' || c == '[' && s[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(s, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			if i = validString(s, i); i < 0 {
				return -1
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = validNumber(s, i); i < 0 {
				return -1
			}
		case c == 't':
			if !hasAt(s, i, "true") {
				return -1
			}
			i += 4
		case c == 'f':
			if !hasAt(s, i, "false") {
				return -1
			}
			i += 5
		case c == 'n':
			if !hasAt(s, i, "null") {
				return -1
			}
			i += 4
		default:
			return -1
		}
		// A value ended at i: close containers, or go on to the next element.
		for {
			if len(stack) == 0 {
				return i
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return -1
			}
			top := stack[len(stack)-1]
			switch {
			case s[i] == ',':
				i = skipWS(s, i+1)
				if top == '{' {
					if i = objectKey(s, i); i < 0 {
						return -1
					}
				}
			case top == '[' && s[i] == ']' || top == '{' && s[i] == '}':
				stack = stack[:len(stack)-1]
				i++
				continue
			default:
				return -1
			}
			break
		}
	}
}

// objectKey reads `"key" :` at i and returns where the value starts, or -1.
func objectKey(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	if i = validString(s, i); i < 0 {
		return -1
	}
	i = skipWS(s, i)
	if i >= len(s) || s[i] != ':' {
		return -1
	}
	return skipWS(s, i+1)
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func hasAt(s string, i int, word string) bool {
	return len(s)-i >= len(word) && s[i:i+len(word)] == word
}

// validString checks the string starting at s[i] == '"' and returns the index after it, or -1.
func validString(s string, i int) int {
	end, _ := scanString(s, i)
	return end
}

// plainByte marks the bytes a JSON string holds as they are: all but control characters, the
// quote and the backslash. (A table: the loop over a job's strings is DecodeHeader's hottest.)
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString is validString that also reports whether the string holds an escape, so that a
// caller can take the bytes between the quotes as its value when it does not.
func scanString(s string, i int) (end int, escaped bool) {
	for i++; ; i++ {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i >= len(s) || s[i] < 0x20 {
			return -1, escaped
		}
		if s[i] == '"' {
			return i + 1, escaped
		}
		// A backslash.
		escaped = true
		i++
		if i >= len(s) {
			return -1, escaped
		}
		switch s[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if len(s)-i < 5 {
				return -1, escaped
			}
			for _, h := range []byte(s[i+1 : i+5]) {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					return -1, escaped
				}
			}
			i += 4
		default:
			return -1, escaped
		}
	}
}

// validNumber checks the number starting at s[i] and returns the index after it, or -1.
func validNumber(s string, i int) int {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsFrom(s, i+1)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := digitsFrom(s, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digitsFrom(s, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digitsFrom returns the index of the first byte at or after i that is not a decimal digit.
func digitsFrom(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
