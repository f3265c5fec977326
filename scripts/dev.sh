#!/usr/bin/env bash
# npm run dev: install what is missing, migrate local D1, build, and run both workers in ONE
# `wrangler dev` (one process shares local D1 and queues between them), with the producer's static
# files' Worker (producer/static) and the browser stand-in. PORT (default 8787) and
# STATE_DIR (local D1 and queues, default .wrangler/state) let a second copy run beside a
# user's own, as the benchmark's black-box run does. Arguments go to `wrangler dev`
# (`npm run dev -- --var OUTBOX_GRACE_SECS:30`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# screenshot_capture's browser, behind the stand-in: Debian's, installed with apt. Without it
# (no apt, no sudo) everything else still runs; screenshot jobs fail until it is there.
bash scripts/install-chromium.sh ||
  echo "warning: Chromium could not be installed (scripts/install-chromium.sh): screenshot_capture jobs will fail locally" >&2

# Local secrets, made once (see .dev.vars.example and consumer/.dev.vars.example). The consumer
# reads its own .dev.vars beside its config.
if [ ! -f .dev.vars ]; then
  token() { node -e 'console.log(require("crypto").randomBytes(18).toString("base64url"))'; }
  {
    echo "ENQUEUE_TOKENS=$(token)"
    echo "ADMIN_TOKENS=$(token)"
  } > .dev.vars
  echo "SIGNING_SECRET=$(token)" > consumer/.dev.vars
fi

state=${STATE_DIR:-.wrangler/state}
npx wrangler d1 migrations apply DB --local --persist-to "$state"
node scripts/build.mjs

port=${PORT:-8787}
token=$(node scripts/dev-tokens.mjs ENQUEUE_TOKENS)
admin_token=$(node scripts/dev-tokens.mjs ADMIN_TOKENS)
cat <<MSG

  Producer: http://localhost:$port   (consumer runs in the same process)

  Enqueue a job (an http job that calls the producer's own /healthz):
    curl -s -X POST http://localhost:$port/v1/jobs \\
      -H "Authorization: Bearer $token" -H "Content-Type: application/json" \\
      -d '{"type":"http","payload":{"url":"http://localhost:$port/healthz","method":"GET"}}'
  Then look at it (use the id printed):
    curl -s http://localhost:$port/v1/jobs/<id> -H "Authorization: Bearer $token"
  The maintenance sweep runs every minute, as the cron trigger does on Cloudflare
  (scripts/dev-cron.mjs); to run a tick now, or as of a later time (ms):
    curl -s http://localhost:$port/cdn-cgi/handler/scheduled
    curl -s "http://localhost:$port/cdn-cgi/handler/scheduled?time=<ms>"
  The operator's API, dashboard (http://localhost:$port/dashboard/) and CLI take the admin token:
    export URL=http://localhost:$port ADMIN_TOKEN=$admin_token

MSG

# screenshot_capture: a headless Chromium on the port the stand-in's config names, stopped with
# this script; the consumer runs its local config, whose BROWSER is the stand-in (docs/app-guide.md
# "Screenshots").
chromium_port=$(sed -n 's|^CHROMIUM_URL = "http://127.0.0.1:\([0-9]*\)"|\1|p' dev/browser-standin/wrangler.toml)
helpers=()
trap 'kill "${helpers[@]}" 2>/dev/null || true' EXIT
if [ -x /usr/bin/chromium ]; then
  node dev/browser-standin/chromium.mjs "$chromium_port" &
  helpers+=($!)
fi
# The producer's cron triggers, on their production cadence (wrangler dev fires none itself).
node scripts/dev-cron.mjs "http://127.0.0.1:$port" $$ &
helpers+=($!)
consumer_config=$(node scripts/local-config.mjs)
npx wrangler dev -c wrangler.toml -c "$consumer_config" -c producer/static/wrangler.toml -c dev/browser-standin/wrangler.toml \
  --persist-to "$state" --port "$port" "$@"
