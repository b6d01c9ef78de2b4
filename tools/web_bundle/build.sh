#!/bin/sh
# Rebuild workbench/replay/web/assets/three.bundle.js: three.js and its OrbitControls as ONE minified
# script (an IIFE defining the global THREE) that the replay page (workbench/replay/web/page.py) inlines,
# so the page works offline, opened as file://.
#
# The bundle is committed: CI and users never need npm. Run this only to change the three.js
# version or the names in entry.js (what the page uses), then commit the bundle, the lock file
# and the LICENSE:
#
#     sh tools/web_bundle/build.sh
#
# Versions are pinned exactly in package.json (three 0.187.0, esbuild 0.28.2) and, with their
# integrity hashes, in package-lock.json; `npm ci` installs exactly those. Needs node >= 18.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
assets="$here/../../workbench/web/assets"
cd "$here"
npm ci --no-audit --no-fund --ignore-scripts
# --ignore-scripts: esbuild's postinstall only checks its platform binary (@esbuild/<platform>),
# which npm installs as an optional dependency anyway.
version=$(node -p 'JSON.parse(require("fs").readFileSync("node_modules/three/package.json", "utf8")).version')
npx esbuild entry.js --bundle --minify --format=iife --global-name=THREE \
    --target=es2020 --legal-comments=none \
    --banner:js="/* three.js r$version (https://threejs.org) with OrbitControls, MIT License: see LICENSE-three.txt */" \
    --outfile="$assets/three.bundle.js"
cp node_modules/three/LICENSE "$assets/LICENSE-three.txt"
ls -l "$assets/three.bundle.js"
