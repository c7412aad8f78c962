package exq

import (
	"time"
)

// foreignWindow is the window of nodes that publish none: Options.ForeignHeartbeatWindow.
func (h *heartbeat) foreignWindow() time.Duration {
	if h.foreign > 0 {
		return h.foreign
	}
	return ForeignHeartbeatWindow
}
