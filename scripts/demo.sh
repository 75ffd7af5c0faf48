#!/usr/bin/env bash
# `make demo`: what seedkit does today, on this machine, with nothing but the repository and ../shared.
set -euo pipefail
seedkit="$1"
vectors="$2"
examples="$(dirname "$0")/../docs/examples"

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
