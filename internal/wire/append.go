package wire

import (
	"strconv"
	"time"
)

// AppendQuote appends s as a JSON string. Plain ASCII (the usual class, queue and jid) is
// copied as is; anything else goes through Quote, which escapes it as encoding/json would
// (without HTML escaping).
func AppendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return append(b, Quote(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as float epoch seconds with microsecond precision (see FormatTime).
func AppendTime(b []byte, t time.Time) []byte {
	us := t.UnixMicro()
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	frac := us % 1e6
	for d := int64(100000); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}
