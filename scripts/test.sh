#!/usr/bin/env bash
# npm test: install what is missing, test the shared, store, producer and consumer crates natively
# (the domain, the SQL's pure parts, the route table, the batch stages), build both workers, then
# run the integration tests against the built WASM on local workerd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/install-chromium.sh # the dashboard's browser test and screenshot_capture's browser
cargo test -p jobs-shared -p jobs-store -p jobs-producer -p jobs-consumer # the producer's route table against openapi.json, the consumer's batch stages
# What the store's statements were checked to be (store/.sqlx, written as it compiled) must be
# what is committed: a statement added, changed or removed without its entry fails here.
if git rev-parse --git-dir >/dev/null 2>&1 && [ -n "$(git status --porcelain -- store/.sqlx)" ]; then
  git status --short -- store/.sqlx
  echo "store/.sqlx differs from the statements: commit it as the build wrote it" >&2
  exit 1
fi
node scripts/build.mjs producer consumer bench/floor
npm run build --workspace clients/js # the TypeScript client, type-checked against the OpenAPI types
# The spec reporter ends with the failing tests, whole, so a log's tail says what failed.
node --test --test-concurrency=1 --test-reporter=spec tests/*.test.mjs
