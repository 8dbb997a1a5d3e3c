#!/usr/bin/env bash
# Vendors the browser code of `molsift serve` from npm into the package, at build time (not
# committed: .gitignore lists python/molsift/serve/page/vendor/; pyproject.toml's
# [tool.maturin] include puts it in wheels and sdists):
# - JSME 0.8.2 (npm jsme-editor, BSD-3-Clause), the structure editor of the search page:
#   page/vendor/jsme/ (its GWT build: jsme.nocache.js loads the rest) with license.txt;
# - Swagger UI 5.35.0 (npm swagger-ui-dist, Apache-2.0), which renders /docs (FastAPI's schema
#   is OpenAPI 3.1, which Swagger UI renders from version 5 on): page/vendor/swagger-ui/ with
#   LICENSE and NOTICE.
# Each tarball is fetched with `npm pack` (no install scripts run) and checked against the
# sha512 pinned here. Safe to re-run: a package already vendored at its version is left alone.
# Needs npm; the page works without these files (no editor: type SMILES; /docs says what is
# missing).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=python/molsift/serve/page/vendor
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if ! command -v npm >/dev/null 2>&1; then
  echo "vendor_js: npm not found: the search page will have no structure editor and /docs no Swagger UI" >&2
  exit 1
fi

# vendor NAME VERSION SHA512 DIR 'FILES': FILES (paths in the package, shell patterns; folders
# whole) of npm package NAME@VERSION into $DEST/DIR, with NAME@VERSION in $DEST/DIR/VERSION
vendor() {
  local name=$1 version=$2 sha=$3 dir=$4 files=$5
  if [ "$(cat "$DEST/$dir/VERSION" 2>/dev/null)" = "$name@$version" ]; then
    return 0
  fi
  local tmp="$TMP/$dir"
  mkdir -p "$tmp"
  (cd "$tmp" && npm pack --silent --ignore-scripts "$name@$version" >/dev/null)
  local tgz=("$tmp"/*.tgz)
  local got
  got="sha512-$(openssl dgst -sha512 -binary "${tgz[0]}" | base64 -w0)"
  if [ "$got" != "$sha" ]; then
    echo "vendor_js: $name@$version: the tarball's sha512 is $got, not the pinned $sha" >&2
    return 1
  fi
  tar -xzf "${tgz[0]}" -C "$tmp"
  mkdir -p "$tmp/out"
  # shellcheck disable=SC2086 # FILES are patterns, expanded in the package's folder
  (cd "$tmp/package" && cp -R $files "$tmp/out/")
  echo "$name@$version" >"$tmp/out/VERSION"
  mkdir -p "$DEST"
  rm -rf "$DEST/$dir"
  mv "$tmp/out" "$DEST/$dir"
  echo "vendor_js: $name@$version in $DEST/$dir ($(du -sh "$DEST/$dir" | cut -f1))"
}

# JSME: the loader, its compiled permutations (*.cache.js) and their deferred fragments, images
# and CSS (not its README, screenshot, dev-mode loader or package.json)
vendor jsme-editor 0.8.2 \
  "sha512-qjPe2CsxWmDlW6brK41e2hsRdFTui8rJwOgk2GkSYTK0l+EljmmC9znp46IqRxOBQWPqJZCPo/MefOJmzeIUOQ==" \
  jsme 'jsme.nocache.js *.cache.js *.cache.png clear.cache.gif jsa.css deferredjs gwt license.txt'

# Swagger UI: the bundle /docs loads, its CSS and icon, and the licence texts
vendor swagger-ui-dist 5.35.0 \
  "sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==" \
  swagger-ui 'swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png LICENSE NOTICE'
