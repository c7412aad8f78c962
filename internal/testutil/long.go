package testutil

import "flag"

// long is the -long test flag of every package that imports testutil: `go test ./reliability
// -long` runs the full, slow variants (repeated failovers) that CI runs once each.
var long = flag.Bool("long", false, "run the long variants of the failover tests")

// Long reports whether the test binary runs with -long.
func Long() bool { return *long }
