#!/usr/bin/env bash
# Points every module of the repo at one commit of the others: each go.mod's requirement on
# github.com/exqgo/exq (and on exqprom, for the examples) becomes that commit's pseudo-version,
# go.work's replace lines follow, and each go.sum is made tidy against those versions, served
# from a GOPROXY=file:// directory made by .ci/modproxy (as .ci/modules.sh builds them).
# Run it after a core change that a module needs, on a clean tree, and commit the result:
#
#	bash .ci/bump.sh            # HEAD
#	bash .ci/bump.sh <commit>
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$root" rev-parse "${1:-HEAD}")
when=$(TZ=UTC git -C "$root" log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S "$rev")
version="v0.0.0-$when-${rev:0:12}"
modules=(exqprom exqotel exqpg webtest bench examples/prometheus)

for mod in "${modules[@]}"; do
  for dep in github.com/exqgo/exq github.com/exqgo/exq/exqprom; do
    if grep -Eq "^(require[[:space:]]+)?[[:space:]]*$dep v" "$root/$mod/go.mod"; then
      (cd "$root/$mod" && GOWORK=off go mod edit -require="$dep@$version")
    fi
  done
done
# go.work maps the required versions to the checkout.
sed -i -E "s#^(replace github.com/exqgo/exq(/exqprom)?) v0\.0\.0-[0-9]{14}-[0-9a-f]{12} =>#\1 $version =>#" "$root/go.work"

proxy=$(mktemp -d)
trap 'rm -rf "$proxy"' EXIT
(cd "$root/.ci/modproxy" && GOWORK=off go run . -repo "$root" -out "$proxy" >/dev/null)
export GOWORK=off GOFLAGS=-buildvcs=false GONOSUMDB=github.com/exqgo/exq
export GOPROXY="file://$proxy,$(go env GOPROXY)"
for mod in "${modules[@]}"; do
  (cd "$root/$mod" && go mod tidy)
done
echo "modules now require $version"
