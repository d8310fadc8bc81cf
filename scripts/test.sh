#!/usr/bin/env bash
# Runs every test of lockkit on a fresh Debian machine: installs the servers
# the store tests talk to (redis-server, redis-cli, memcached, etcd,
# PostgreSQL) and the shells lockctl's completion is tested in (zsh, fish)
# when they are missing, then vets, lints (staticcheck) and tests every
# module with the race detector. The root module's tests include
# internal/release's: it publishes every module to a local module proxy and
# builds a consumer of them.
#
# Set LOCKKIT_REQUIRE_SERVERS=1 to make a missing server fail the tests
# instead of skipping them (.ci/run does).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null; then
  echo "test.sh: Go is not installed; get Go 1.26 or newer (go.work's go line) from https://go.dev/dl/" >&2
  exit 1
fi

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v memcached >/dev/null || missing+=(memcached)
command -v etcd >/dev/null || missing+=(etcd-server)
# PostgreSQL: Debian keeps initdb and postgres out of the PATH.
command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v zsh >/dev/null || missing+=(zsh)
command -v fish >/dev/null || missing+=(fish)
if ((${#missing[@]})); then
  if command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "test.sh: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "test.sh: ${missing[*]} missing and no apt-get: the store tests will skip" >&2
  fi
fi

# The linter, pinned, fetched through the Go module proxy.
staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Every module of the repository: the library and any nested module.
for mod in $(find . -name go.mod -not -path '*/testdata/*' | sort); do
  dir=$(dirname "$mod")
  echo "== $dir" >&2
  (
    cd "$dir"
    go vet ./...
    go run "$staticcheck" ./...
    go test -race -timeout 20m ./...
    # Every benchmark, briefly, so that none rots (numbers: bench/).
    go test -run '^$' -bench . -benchtime=100x -timeout 10m ./...
  )
done
