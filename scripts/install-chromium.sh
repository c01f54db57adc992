#!/usr/bin/env bash
# Debian's chromium and the fonts the site's figures and PDFs name, for the browser tests and the PDF export.
# Installs only what is missing: a machine that has chromium but not the print fonts gets the fonts.
set -euo pipefail
# DejaVu: the print view's text, code and math fonts; Noto CJK and Symbola: CJK and emoji in figures and pages.
PACKAGES=(chromium fonts-dejavu-core fonts-dejavu-extra fonts-noto-cjk fonts-symbola)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "missing Debian packages and this user cannot install them: run 'apt-get install ${missing[*]}' as root" >&2
    exit 1
  fi
fi
echo "installing ${missing[*]} (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v fc-cache >/dev/null 2>&1 && fc-cache -s >/dev/null 2>&1 || true
# Debian's chromium wrapper misparses /dev/shm's size in some containers and prints a shell warning; the
# version line comes from the binary itself.
echo "ready: $(/usr/lib/chromium/chromium --version 2>/dev/null || chromium --version 2>/dev/null)"
