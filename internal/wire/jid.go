package wire

import (
	"crypto/rand"
	"sync"
)

// jidPool buffers randomness for NewJID: one read from the system's generator serves 256
// jids, where a read per jid was a syscall on every enqueue.
var jidPool struct {
	sync.Mutex
	buf [16 * 256]byte
	pos int
}

const hexDigits = "0123456789abcdef"

// NewJID returns a random (version 4) UUID in its usual text form, as Exq writes jids.
func NewJID() string {
	var u [16]byte
	jidPool.Lock()
	if jidPool.pos == 0 || jidPool.pos == len(jidPool.buf) {
		_, _ = rand.Read(jidPool.buf[:]) // crypto/rand never fails on supported platforms
		jidPool.pos = 0
	}
	copy(u[:], jidPool.buf[jidPool.pos:])
	jidPool.pos += 16
	jidPool.Unlock()
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[c>>4], hexDigits[c&0x0f]
		j += 2
	}
	return string(s[:])
}
