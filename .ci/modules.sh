#!/usr/bin/env bash
# Builds exq's modules as a user outside this repository does: no workspace, no replace, every
# module of this repo served from a GOPROXY=file:// directory that .ci/modproxy makes from the
# checkout's git history (the zips the Go module proxy would serve). Checks that each module's
# go.mod and go.sum are what `go mod tidy` gives against the core version it requires, and
# builds and runs .ci/outside, which imports exq, web, exqprom and exqotel at HEAD's version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
proxy=$(mktemp -d)
user=$(mktemp -d)
trap 'rm -rf "$proxy" "$user"' EXIT

head=$(cd "$root/.ci/modproxy" && GOWORK=off go run . -repo "$root" -out "$proxy")
echo "modules published from this checkout at $head"
export GOWORK=off GOFLAGS=-buildvcs=false GONOSUMDB=github.com/exqgo/exq
export GOPROXY="file://$proxy,$(go env GOPROXY)"

for mod in exqprom exqotel exqpg webtest bench examples/prometheus; do
  echo "$mod: go mod tidy -diff and go build against $(cd "$root/$mod" && go list -m -f '{{.Version}}' github.com/exqgo/exq)"
  (cd "$root/$mod" && go mod tidy -diff && go build ./...)
done

cp "$root/.ci/outside/main.go" "$user/"
cd "$user"
go mod init example.com/outside >/dev/null 2>&1
go get "github.com/exqgo/exq@$head" "github.com/exqgo/exq/exqprom@$head" "github.com/exqgo/exq/exqotel@$head" >/dev/null 2>&1 \
  || go get "github.com/exqgo/exq@$head" "github.com/exqgo/exq/exqprom@$head" "github.com/exqgo/exq/exqotel@$head"
go mod tidy
go vet .
go run .
