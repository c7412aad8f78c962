package exq

import (
	"runtime/debug"
	"sync"
)

// Version is the version of this library: the release it is, or the one being prepared
// ("-dev"). It is listed in CHANGELOG.md with what changed.
const Version = "0.1.0-dev"

// modulePath is this module's import path, as the build info names it.
const modulePath = "github.com/exqgo/exq"

// nodeVersion is what a node writes as its "version" in its info field, which Sidekiq 7 and 8's
// Busy page shows when it differs from its own ("Version: exq-go v1.4.0"): "exq-go" and the
// module version the binary was built with, or Version when it was built from a checkout (the
// build info then says "(devel)").
var nodeVersion = sync.OnceValue(func() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
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
