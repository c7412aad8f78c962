package cronspec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReadsSidekiqCronLinesAndRefusesOthers(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"* * * * *", "0 3 * * *", "*/10 * * * * *", "0 3 * * * Europe/Berlin", "0 3 * * * UTC", "@daily"} {
		_, err := Parse(line, "")
		assert.NoError(t, err, line)
	}
	for line, want := range map[string]string{
		"":                         "empty",
		" * * * * *":               "spaces around it",
		"* * * * * *  ":            "spaces around it",
		"0 0 3 * * * *":            "7 fields",
		"61 * * * *":               "spec",
		"0 3 * * * Mars/Olympus":   "time zone",
		"not a cron line at all x": "spec",
		"@every 1h":                "not a cron line", // Every turns it into one first
	} {
		_, err := Parse(line, "")
		assert.ErrorContains(t, err, want, "%q", line)
	}
	_, err := Parse("* * * * *", "Nowhere/Else")
	assert.ErrorContains(t, err, "timezone")
}

func TestZoneLike(t *testing.T) {
	t.Parallel()
	for f, want := range map[string]bool{"UTC": true, "Local": true, "Europe/Berlin": true, "America/New_York": true,
		"*/5": false, "1-5": false, "mon": false, "a/b": false} {
		assert.Equal(t, want, ZoneLike(f), f)
	}
}

func TestNextInAZoneFromTheLineOrTheDefault(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s, err := Parse("0 3 * * * Europe/Berlin", "America/New_York")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 6, 2, 1, 0, 0, 0, time.UTC), s.Next(from).UTC(), "03:00 CEST, the line's zone wins")
	s, err = Parse("0 3 * * *", "America/New_York")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC), s.Next(from).UTC(), "03:00 EDT")
	s, err = Parse("*/15 * * * * *", "UTC")
	require.NoError(t, err)
	assert.Equal(t, from.Add(15*time.Second), s.Next(from), "seconds first")
}

func TestWallClockSpecsFireOnceAcrossDaylightSavingChanges(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	// 2026-03-29: 02:00 CET jumps to 03:00 CEST. 02:30 does not happen: it fires when the clocks
	// have moved on by as much, 03:30 CEST.
	s, err := Parse("30 2 * * *", "Europe/Berlin")
	require.NoError(t, err)
	got := s.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, berlin))
	assert.Equal(t, time.Date(2026, 3, 29, 3, 30, 0, 0, berlin), got.In(berlin))

	// 2026-10-25: 03:00 CEST falls back to 02:00 CET. 02:30 happens twice: it fires the first time.
	first := s.Next(time.Date(2026, 10, 25, 0, 0, 0, 0, berlin))
	assert.Equal(t, time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), first.UTC(), "02:30 CEST")
	next := s.Next(first)
	assert.Equal(t, time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC), next.UTC(), "not again an hour later, but the next day")

	// Every hour ticks in real time: the repeated hour too.
	hourly, err := Parse("0 * * * *", "Europe/Berlin")
	require.NoError(t, err)
	at := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC) // 02:00 CEST
	var ticks []time.Time
	for range 3 {
		at = hourly.Next(at)
		ticks = append(ticks, at.UTC())
	}
	assert.Equal(t, []time.Time{time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 25, 3, 0, 0, 0, time.UTC)}, ticks)
}

func TestNextOfASpecThatNeverFiresIsZero(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 0 30 2 *", "UTC") // February 30th
	require.NoError(t, err)
	assert.True(t, s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero())
	assert.True(t, s.Latest(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero())
	w, err := Parse("0 3 30 2 *", "Europe/Berlin")
	require.NoError(t, err)
	assert.True(t, w.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero())
}

func TestLatestIsTheLastTickAtOrBefore(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 3 * * *", "UTC")
	require.NoError(t, err)
	at := time.Date(2026, 6, 2, 3, 0, 0, 0, time.UTC)
	assert.Equal(t, at, s.Latest(at), "at counts")
	assert.Equal(t, at, s.Latest(at.Add(5*time.Hour)))
	assert.Equal(t, at.AddDate(0, 0, -1), s.Latest(at.Add(-time.Second)))
	y, err := Parse("0 0 1 1 *", "UTC")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), y.Latest(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)), "a year back")
}

func TestEveryTurnsIntervalsThatDivideAMinuteHourOrDayIntoCronLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, want string
		every      bool
		err        string
	}{
		{"0 3 * * *", "0 3 * * *", false, ""},
		{"@every 30s", "*/30 * * * * *", true, ""},
		{"@every 15m", "0 */15 * * * *", true, ""},
		{"@every 6h", "0 0 */6 * * *", true, ""},
		{"@every 24h", "0 0 */24 * * *", true, ""},
		{"@every 7m", "", true, "must divide"},
		{"@every 90s", "", true, "must divide"},
		{"@every 1500ms", "", true, "must divide"},
		{"@every 48h", "", true, "must divide"},
		{"@every soon", "", true, "soon"},
	} {
		got, every, err := Every(tc.line)
		assert.Equal(t, tc.every, every, tc.line)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.want, got, tc.line)
		_, err = Parse(got, "UTC")
		assert.NoError(t, err, "%s parses", got)
	}
	for name, line := range Descriptors {
		_, err := Parse(line+" UTC", "")
		assert.NoError(t, err, name)
	}
}
