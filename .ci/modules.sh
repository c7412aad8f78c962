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

# Adding any module keeps a user's go line at the supported minimum (the README's "exq needs
# Go X.Y or newer"): a module whose go.mod, or a dependency's, asks for more would raise it.
min=$(sed -nE 's/^exq needs Go ([0-9]+\.[0-9]+) or newer\..*/\1/p' "$root/README.md")
[ -n "$min" ] || { echo "README.md states no \"exq needs Go X.Y or newer.\""; exit 1; }
for mod in "" /exqpg /exqprom /exqotel; do
  dir=$(mktemp -d -p "$user")
  (cd "$dir" && go mod init example.com/golines >/dev/null 2>&1 && go mod edit -go="$min.0" \
    && go get "github.com/exqgo/exq$mod@$head" >/dev/null 2>&1 \
    && got=$(go mod edit -json | sed -nE 's/^[[:space:]]*"Go": "([^"]+)".*/\1/p') \
    && if [ "$got" != "$min.0" ]; then
         echo "go get github.com/exqgo/exq$mod raised a go $min.0 module's go line to $got"; exit 1
       fi) || { echo "go line check of github.com/exqgo/exq$mod failed"; exit 1; }
  echo "github.com/exqgo/exq$mod: go get keeps a user's go $min.0"
done
