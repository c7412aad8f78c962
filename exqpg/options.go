package exqpg

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/exqgo/exq"
)

// ErrInvalidOptions is wrapped by NewRelay's errors, which name the field.
var ErrInvalidOptions = errors.New("exqpg: invalid options")

// RelayOptions configure a Relay. The zero value is the default for every field.
type RelayOptions struct {
	// Schema is the schema of the outbox table (Migrate's). Default DefaultSchema.
	Schema string
	// BatchSize is the most rows one round reads, pushes in one script call and deletes.
	// Default 1000.
	BatchSize int
	// PollInterval is how often the relay looks for rows when no notification came: the
	// safety net for a notification lost while its LISTEN connection was down. Default 1s.
	PollInterval time.Duration
	// MarkTTL is how long Redis remembers a pushed jid (see exq.Client.PushRelayed); it must
	// be far longer than a dead relay's rows can stay locked. A relay that dies between its
	// push and its delete leaves rows that a relay taking them over within MarkTTL deletes as
	// duplicates; after it, they are pushed again (docs/outbox.md, "The push and the delete").
	// Default exq.DefaultRelayMarkTTL (24 h).
	MarkTTL time.Duration
	// MaxBackoff caps the wait between attempts while Redis or Postgres fails; the wait starts
	// at 100 ms and doubles. Default 10s.
	MaxBackoff time.Duration
	// StatusInterval is how often the relay reads the backlog, logs a warning past the
	// thresholds below and reports it to Redis for the admin API, the dashboard and `exq outbox
	// status`. Default 5s.
	StatusInterval time.Duration
	// WarnBacklog logs a warning while more rows than this wait. Default 10 000; negative
	// never warns.
	WarnBacklog int64
	// WarnAge logs a warning while the oldest waiting row is older than this. Default 1 min;
	// negative never warns.
	WarnAge time.Duration
	// Logger receives the relay's logs. Default slog.Default().
	Logger *slog.Logger
}

func (o RelayOptions) withDefaults() (RelayOptions, error) {
	schema, err := checkSchema(o.Schema)
	if err != nil {
		return o, fmt.Errorf("%w: Schema: %w", ErrInvalidOptions, err)
	}
	o.Schema = schema
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"BatchSize", o.BatchSize < 0 || o.BatchSize > maxRowsPerInsert},
		{"PollInterval", o.PollInterval < 0},
		{"MarkTTL", o.MarkTTL < 0},
		{"MaxBackoff", o.MaxBackoff < 0},
		{"StatusInterval", o.StatusInterval < 0},
	} {
		if f.bad {
			return o, fmt.Errorf("%w: %s is out of range (negative, or BatchSize above %d)", ErrInvalidOptions, f.name, maxRowsPerInsert)
		}
	}
	if o.BatchSize == 0 {
		o.BatchSize = 1000
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.MarkTTL == 0 {
		o.MarkTTL = exq.DefaultRelayMarkTTL
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.StatusInterval == 0 {
		o.StatusInterval = 5 * time.Second
	}
	if o.WarnBacklog == 0 {
		o.WarnBacklog = 10000
	}
	if o.WarnAge == 0 {
		o.WarnAge = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
