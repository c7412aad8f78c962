package exq

import (
	"fmt"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// Rate limits how many jobs of a queue start per period across every node of the namespace:
// at most N starts in any window of length Per (not only per calendar period, so there is no
// burst of 2N around a period's edge), spread out evenly rather than taken all at once. Jobs
// beyond it wait in their queue; none is fetched and put back.
//
// exq paces the starts at N per Per plus 1 %: a job begins a moment after the fetch that
// took it, and the margin keeps even the times the jobs themselves see within N per Per.
type Rate struct {
	// N is the most starts per Per; at least 1.
	N int `json:"n"`
	// Per is the period; at least a millisecond.
	Per time.Duration `json:"per"`
}

// String renders r as "200/1s", "10/1m" or "5/1h30m".
func (r Rate) String() string {
	if r.N == 0 {
		return ""
	}
	per := r.Per.String()
	// time.Duration prints a minute as "1m0s": drop the zero units at the end.
	for _, zero := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(per, zero) {
			per = strings.TrimSuffix(per, zero[1:])
		}
	}
	return fmt.Sprintf("%d/%s", r.N, per)
}

// limits are q's cluster-wide limits, as a fetch request carries them.
func (q Queue) limits() store.Limits {
	return store.Limits{Global: q.GlobalLimit, RateN: q.Rate.N, RatePer: q.Rate.Per}
}

// rateOf is the Rate of limits l.
func rateOf(l store.Limits) Rate { return Rate{N: l.RateN, Per: l.RatePer} }

// limitError names the field of a Queue whose limit is wrong.
type limitError struct{ field, msg string }

// checkLimits validates q's GlobalLimit and Rate.
func (q Queue) checkLimits() *limitError {
	if q.GlobalLimit < 0 {
		return &limitError{"GlobalLimit", fmt.Sprintf("must not be negative, got %d", q.GlobalLimit)}
	}
	switch r := q.Rate; {
	case r == Rate{}:
	case r.N < 1:
		return &limitError{"Rate.N", fmt.Sprintf("must be at least 1, got %d", r.N)}
	case r.Per < time.Millisecond:
		return &limitError{"Rate.Per", fmt.Sprintf("must be at least 1ms, got %s", r.Per)}
	}
	return nil
}
