#!/usr/bin/env bash
# The hand-written pair, started as `npm run dev` starts the project (scripts/dev.sh): the
# migration applied to local D1, then both Workers in ONE `wrangler dev`. PORT and STATE_DIR
# as there.
set -euo pipefail
cd "$(dirname "$0")"
state=${STATE_DIR:-../../.wrangler/handwritten}
npx wrangler d1 migrations apply DB --local --persist-to "$state" -c producer.toml
npx wrangler dev -c producer.toml -c consumer.toml --persist-to "$state" --port "${PORT:-8788}"
