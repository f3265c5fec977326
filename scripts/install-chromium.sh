#!/usr/bin/env bash
# Installs Debian's chromium (the dashboard's browser test; screenshot_capture's browser behind
# the Browser Rendering stand-in in dev and tests), once: skipped when present.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
