#!/usr/bin/env bash
# `make demo`: what seedkit does today, on this machine, with nothing but the repository and ../shared:
# the conformance vectors, the digest tools, then the main job — `seedkit pipeline run pipelines/demo.json`
# builds a portable seed of the 100,000-row demo catalog from the embedded reference server (export, verify,
# pack, install as a device, rehearse the first sync against a from-scratch rebuild, publish atomically),
# shows what a device gets, re-checks the published files and shows that an unchanged pipeline is reused.
set -euo pipefail
seedkit="$1"
vectors="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
examples="$root/docs/examples"
started=$SECONDS

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

pipeline="$root/pipelines/demo.json"
published="$root/out/demo"

# --force: the demo always does the work, even when out/demo already holds this publication from an earlier
# `make demo`; that publication stays in place, untouched, until the new one is complete.
step "build a seed: seedkit pipeline run pipelines/demo.json --force (embedded reference server, demo dataset)"
"$seedkit" pipeline run "$pipeline" --force

step "what a device gets ($published)"
ls -l "$published"
(cd "$published" && sha256sum -c SHA256SUMS)

step "seedkit verify out/demo/seed.db.zst: every publication and device-installer check, offline"
"$seedkit" verify "$published/seed.db.zst"

step "the same pipeline again: unchanged inputs, so the publication is reused, not rebuilt"
"$seedkit" pipeline run "$pipeline" | tail -n 1

step "done in $((SECONDS - started)) s"
