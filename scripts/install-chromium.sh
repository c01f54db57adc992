#!/usr/bin/env bash
# Install Debian's chromium (and CJK fonts for figure labels) for the browser tests and PDF export.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "chromium is missing and this user cannot install it: run 'apt-get install chromium fonts-noto-cjk fonts-symbola' as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk fonts-symbola >/dev/null
echo "installed $(chromium --version)"
