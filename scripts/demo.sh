#!/usr/bin/env bash
# `make demo`: what seedkit does today, on this machine, with nothing but the repository and ../shared:
# the conformance vectors, the digest tools, and a headless client syncing the 100,000-row demo
# dataset from the embedded reference server.
set -euo pipefail
seedkit="$1"
vectors="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
examples="$root/docs/examples"
work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

if [ -f "$vectors" ]; then
    step "upstream conformance vectors ($vectors)"
    "$seedkit" conformance vectors "$vectors"
else
    step "upstream conformance vectors: $vectors not found, skipped"
fi

step "schema hash of a manifest (docs/examples/manifest.json)"
"$seedkit" digest manifest "$examples/manifest.json"

step "row identity and checksum (docs/examples/row.json)"
"$seedkit" digest row "$examples/row.json"

step "scope checksum (docs/examples/scope.json)"
"$seedkit" digest scope "$examples/scope.json"

step "push fingerprints and limits (docs/examples/push.json)"
"$seedkit" digest push "$examples/push.json" --user user-7f3a

step "reference server: seedkit serve --dataset seeds/demo (100,000-row portable catalog)"
export SEEDKIT_TOKENS="alice=demo-secret-alice"
"$seedkit" serve --dataset "$root/seeds/demo" --db "$work/server.db" --listen 127.0.0.1:0 \
    > "$work/serve.out" 2> "$work/serve.err" &
server_pid=$!
for _ in $(seq 1 1200); do
    if grep -q '^listening on ' "$work/serve.out" 2>/dev/null; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/serve.err" >&2; exit 1; fi
    sleep 0.1
done
url="$(sed -n 's/^listening on //p' "$work/serve.out" | head -n 1)"
[ -n "$url" ] || { echo "the server did not start" >&2; exit 1; }
echo "listening on $url"

export SEEDKIT_TOKEN="demo-secret-alice"
step "first sync: connect, rebuild every assigned scope, verify every digest"
"$seedkit" sync --server "$url" --db "$work/app.db"

step "second sync: the steady cycle (connect + one pull, digests verified again)"
"$seedkit" sync --server "$url" --db "$work/app.db"
