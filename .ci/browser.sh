#!/usr/bin/env bash
# Headless Chromium for CI: tests/analysis/test_report_html.py renders the HTML selection report with it
# (screenshot + DOM dump). Debian's `chromium` package installs /usr/bin/chromium; nothing is
# downloaded at test time.
#
#   bash .ci/browser.sh          # install chromium with apt when missing, then check that it runs headless
#
# Run as root. Idempotent: when chromium is already installed, nothing is installed again.
set -euo pipefail

step() { printf '[browser.sh] %s\n' "$*"; }
die() {
    printf '[browser.sh] ERROR: %s\n' "$*" >&2
    exit 1
}

find_browser() { command -v chromium || command -v chromium-browser || true; }

install_browser() {
    local browser
    browser=$(find_browser)
    if [[ -n $browser ]]; then
        step "chromium: already installed ($browser)"
        return
    fi
    [[ $(id -u) == 0 ]] || die "chromium is missing and installing it needs root (apt-get install chromium)"
    step "chromium: apt-get install chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # fonts-dejavu-core: the report's text must render with a real font in a minimal image.
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
    [[ -n $(find_browser) ]] || die "apt-get installed chromium but no chromium binary is on PATH"
}

smoke() {
    local browser dir
    browser=$(find_browser)
    dir=$(mktemp -d /tmp/browser-smoke.XXXXXX)
    trap 'rm -rf "$dir"' RETURN
    printf '<!doctype html><title>smoke</title><h1>browser ok</h1>\n' >"$dir/page.html"
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --no-first-run --user-data-dir="$dir/profile" --dump-dom "file://$dir/page.html" \
        2>"$dir/stderr" >"$dir/dom" || {
        cat "$dir/stderr" >&2
        die "headless chromium failed on a one-line page"
    }
    grep -q 'browser ok' "$dir/dom" || die "headless chromium did not render the smoke page (DOM: $(head -c 300 "$dir/dom"))"
    step "ready: $("$browser" --version 2>/dev/null || echo "$browser") renders headless"
}

install_browser
smoke
