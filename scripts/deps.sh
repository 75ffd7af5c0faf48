#!/usr/bin/env bash
# Installs the Debian packages seedkit builds and tests against, only those that are missing.
set -euo pipefail

# zsh and fish only for CompletionTests, which check their completion scripts (skipped, with the reason, without them).
packages=(libsqlite3-dev libzstd-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libpq-dev postgresql sqlite3 zstd gzip pkg-config zsh fish)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if ! command -v swift >/dev/null 2>&1; then
    echo "deps: the Swift toolchain (swift 6) must be on PATH" >&2
    exit 1
fi
