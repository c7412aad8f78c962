package scripts

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed debounce.lua
var debounceSrc string

// Debounce writes one debounced job into the schedule set, joining or starting its key's
// burst (debounce.lua). Out of memory it is refused whole, as the enqueue scripts are.
var Debounce = redis.NewScript(debounceSrc)
