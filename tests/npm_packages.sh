# Sourced by the test scripts that need pinned npm packages: checks node and npm
# (exits 77, SKIP, without them, with a node older than 20, or when the npm
# registry is unreachable) and installs the package.json / package-lock.json of
# SOURCE_DIR into WORK_DIR with `npm ci`, once or when the lock file changes.
# Usage: install_npm_packages WORK_DIR SOURCE_DIR WHAT
# Sets npm_installed=1 when this call ran npm ci.
install_npm_packages() {
  local work=$1 src=$2 what=$3
  npm_installed=0
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are needed for $what (Debian: apt-get install nodejs npm)"
    exit 77
  fi
  local node_major
  node_major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$node_major" -lt 20 ]; then
    echo "SKIP: node $(node --version) is too old; $what needs node 20 or later"
    exit 77
  fi
  mkdir -p "$work"
  local stamp="$work/node_modules/.lamina-package-lock.json"
  if cmp -s "$src/package-lock.json" "$stamp"; then return 0; fi
  cp "$src/package.json" "$src/package-lock.json" "$work/"
  echo "installing $what into $work (npm ci)"
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    # An offline machine cannot run these tests: that is a skip, not a
    # failure. A registry that answers but an install that fails is a failure.
    local registry
    registry=$(npm config get registry 2>/dev/null || echo "the npm registry")
    if ! timeout 30 npm ping --fetch-retries=0 >/dev/null 2>&1; then
      echo "SKIP: $registry is unreachable, so the pinned packages for $what cannot be installed"
      exit 77
    fi
    echo "FAIL: npm ci could not install the pinned packages for $what ($registry answers)"
    exit 1
  fi
  cp "$src/package-lock.json" "$stamp"
  npm_installed=1
}
