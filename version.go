package exq

import (
	"runtime/debug"
	"sync"
)

// modulePath is this module's import path, as the build info names it.
const modulePath = "github.com/exqgo/exq"

// nodeVersion is what a node writes as its "version" in its info field, which Sidekiq 7 and 8's
// Busy page shows when it differs from its own ("Version: exq-go v1.4.0"): "exq-go" and the
// module version the binary was built with, "(devel)" when built from a checkout.
var nodeVersion = sync.OnceValue(func() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	return "exq-go " + v
})
