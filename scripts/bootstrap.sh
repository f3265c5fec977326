#!/usr/bin/env bash
# Installs whatever this machine lacks to build and run the workers, skipping what is present.
# Versions come from Cargo.lock and package-lock.json, never from a second copy here.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

locked() { # the version Cargo.lock pins for crate $1
  awk -v n="name = \"$1\"" '$0 == n { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock
}

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

worker_version=$(locked worker)
if ! worker-build --version 2>/dev/null | grep -qF "$worker_version"; then
  cargo install worker-build --version "=$worker_version"
fi

# The CLI must equal the wasm-bindgen library in Cargo.lock exactly. No --locked: its own lock
# file wants a crate version the registry mirror lacks.
bindgen_version=$(locked wasm-bindgen)
if ! wasm-bindgen --version 2>/dev/null | grep -qF " $bindgen_version"; then
  cargo install wasm-bindgen-cli --version "=$bindgen_version"
fi

# wrangler, miniflare and binaryen (wasm-opt); reinstalled when the lock file changes.
if [ ! -x node_modules/.bin/wrangler ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# The TypeScript client (clients/js), which the operator CLI (`npx cf-jobs`) runs on: built when
# it has no build yet or a source is newer than it.
if [ ! -f clients/js/dist/index.js ] || [ -n "$(find clients/js/src clients/js/tsconfig.json -newer clients/js/dist/index.js -print -quit)" ]; then
  npm run build --workspace clients/js --silent
fi
