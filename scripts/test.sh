#!/usr/bin/env bash
# npm test: install what is missing, test the shared, store, producer and consumer crates natively
# (the domain, the SQL's pure parts, the route table, the batch stages), build both workers, then
# run the integration tests against the built WASM on local workerd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/install-chromium.sh # the dashboard's browser test and screenshot_capture's browser
cargo test -p jobs-shared -p jobs-store -p jobs-producer -p jobs-consumer # the producer's route table against openapi.json, the consumer's batch stages
node scripts/build.mjs producer consumer bench/floor
npm run build --workspace clients/js # the TypeScript client, type-checked against the OpenAPI types
node --test --test-concurrency=1 tests/*.test.mjs
