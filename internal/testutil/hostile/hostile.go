// Package hostile holds the hostile stored documents the operator-surface tests seed into
// Redis (testdata/, each file one member byte for byte): terminal escape sequences, invalid
// UTF-8, NUL bytes, raw line breaks, 10 000-deep JSON, HTML, documents that are no JSON, and
// ".." names; and builders for the large ones that are not worth checking in.
package hostile

import (
	"embed"
	"strings"
)

//go:embed testdata
var files embed.FS

// Member returns the fixture testdata/name, byte for byte.
func Member(name string) string {
	b, err := files.ReadFile("testdata/" + name)
	if err != nil {
		panic("hostile: no fixture " + name)
	}
	return string(b)
}

// Names lists every fixture.
func Names() []string {
	es, _ := files.ReadDir("testdata")
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out
}

// Big is a job of about size bytes (one long string argument) with jid jid.
func Big(jid string, size int) string {
	return `{"class":"Big","args":["` + strings.Repeat("x", size) + `"],"queue":"default","jid":"` + jid + `"}`
}

// NodeIdentity is a process identity that is not valid UTF-8.
const NodeIdentity = "host\xff\xfe:4242:0123456789ab"
