// Package docs holds the test that keeps the Go code in README.md and docs/ compiling: every
// ```go block there must be preceded by a line `<!-- code: PATH -->` naming a Go file of the
// repository (an Example function, an examples/ program), and must appear in that file line
// for line, so that what the docs show is code CI builds and runs.
package docs
