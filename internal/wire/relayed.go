package wire

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Relayed is what an outbox relay's push needs of a job document that an enqueue rendered
// earlier and a database kept: its jid, class and queue and, for a unique job, the lock's
// token and when it unlocks (unlocks_at, float Unix seconds as NewJob writes it).
type Relayed struct {
	JID, Class, Queue string
	UniqueToken       string
	UnlocksAt         time.Time
}

// ReadRelayed reads doc for a relayed push. The error says what is missing or wrong; the jid
// is set as soon as it is read, so that the caller can name the job it refuses.
func ReadRelayed(doc string) (Relayed, error) {
	h, err := DecodeHeader(doc)
	if err != nil {
		return Relayed{}, fmt.Errorf("the document is not a job: %v", err)
	}
	r := Relayed{JID: h.JID, Class: h.Class, Queue: h.Queue, UniqueToken: h.UniqueToken}
	switch {
	case h.JID == "":
		return r, errors.New("the document has no jid")
	case h.Class == "":
		return r, errors.New("the document's class is empty")
	case h.UniqueToken == "":
		return r, nil
	}
	o, err := ParseObject(doc)
	if err != nil {
		return r, fmt.Errorf("the document is not a job: %v", err)
	}
	raw, ok := o.Get("unlocks_at")
	if !ok {
		return r, errors.New("the document has a unique_token but no unlocks_at")
	}
	sec, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || sec <= 0 {
		return r, fmt.Errorf("the document's unlocks_at is not a positive number: %.40q", raw)
	}
	// Clamped, never wrapped: a number of seconds past year 9999 does not fit the conversion.
	r.UnlocksAt = ParseTime(min(sec, float64(LatestTime.Unix())))
	return r, nil
}
