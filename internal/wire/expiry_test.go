package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expires_at is read as Sidekiq Pro writes it (float seconds), an integer of seconds as
// seconds, one of at least 10^11 as milliseconds; anything else is no expiry.
func TestExpiresAtIsReadInSecondsOrMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  time.Time
	}{
		{`1900000000.5`, time.Unix(1900000000, 5e8)},
		{`1900000000`, time.Unix(1900000000, 0)},
		{`1900000000500`, time.UnixMilli(1900000000500)},
		{`1.9e9`, time.Unix(1900000000, 0)},
		{`0`, time.Time{}},
		{`-5`, time.Time{}},
		{`"1900000000"`, time.Time{}},
		{`null`, time.Time{}},
	} {
		h, err := DecodeHeader(`{"class":"W","args":[],"jid":"j","expires_at":` + tc.field + `}`)
		require.NoError(t, err, tc.field)
		assert.True(t, tc.want.Equal(h.ExpiresAt.Expiry()), "%s: got %s", tc.field, h.ExpiresAt.Expiry())
	}
	h, err := DecodeHeader(`{"class":"W","args":[],"jid":"j"}`)
	require.NoError(t, err)
	assert.True(t, h.ExpiresAt.Expiry().IsZero(), "absent: none")

	// Written as float seconds, always with a point.
	doc := NewJob{Class: "W", Args: []byte("[]"), Queue: "q", JID: "j", ExpiresAt: time.Unix(1900000000, 0)}.Encode()
	assert.Contains(t, doc, `"expires_at":1900000000.000000`)
	assert.True(t, Reserved("expires_at"))
}
