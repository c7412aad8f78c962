package wire

import "time"

// LatestTime is the latest time exq writes as a due time (a schedule score, a relayed job's
// run_at, a unique lock's unlocks_at): the last microsecond of year 9999 UTC, the last one RFC
// 3339 and JSON can write. A later time is refused where it comes in, never written: past
// year 294246 its microseconds no longer fit in an int64 and would wrap into a negative score,
// a job due at once.
var LatestTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
