#!/usr/bin/env bash
# Installs code-server (pinned) for the end-to-end test into $1 (default: .e2e/code-server
# beside this extension), without downloading anything outside the npm registry:
# @vscode/ripgrep's postinstall would fetch a prebuilt `rg`, so its download cache is
# filled first with the system's ripgrep (apt's `ripgrep`).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$here/.e2e/code-server}"
version=4.100.3
# The version code-server 4.100.3 pins in lib/vscode/npm-shrinkwrap.json, and the
# ripgrep build that version's postinstall asks for.
rg_pkg=1.15.11
rg_asset=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
if [ -x "$dest/node_modules/.bin/code-server" ] &&
  "$dest/node_modules/.bin/code-server" --version 2>/dev/null | grep -q "^$version "; then
  echo "code-server $version already in $dest"
  exit 0
fi
rg="$(command -v rg)" || { echo "ripgrep (rg) is missing: apt-get install ripgrep" >&2; exit 1; }
tmp="${TMPDIR:-/tmp}"
cache="$tmp/vscode-ripgrep-cache-$rg_pkg"
mkdir -p "$cache"
stage="$(mktemp -d)"
cp "$rg" "$stage/rg"
tar -czf "$cache/$rg_asset" -C "$stage" rg
rm -rf "$stage"
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || echo '{"private":true}' >package.json
# npm 11 blocks dependency install scripts unless approved; code-server's postinstall runs
# nested installs (lib/vscode, its native modules) that need theirs: this pinned,
# shrinkwrapped package is allowed to run them all.
# node-pty's postinstall calls `npx node-gyp`, which must not stop to ask.
npm_config_yes=true npm_config_unsafe_perm=true npm_config_dangerously_allow_all_scripts=true npm install --no-audit --no-fund --save-exact "code-server@$version"
"$dest/node_modules/.bin/code-server" --version
