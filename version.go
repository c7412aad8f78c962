package exq

// Version is the version of this library: the release it is, or the one being prepared
// ("-dev"). It is listed in CHANGELOG.md with what changed.
const Version = "0.1.0-dev"
