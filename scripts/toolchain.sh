# Source this file: it puts Node 24 and pnpm on PATH, installing them into .tools/ from the npm
# registry when the machine has an older Node or no pnpm. Nothing else is downloaded.
#   source scripts/toolchain.sh
TOLLGATE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOLLGATE_NODE_VERSION="24.21.0"
TOLLGATE_PNPM_VERSION="12.21.0"
TOLLGATE_TOOLS="$TOLLGATE_ROOT/.tools"

_tollgate_node_ok() { command -v node >/dev/null 2>&1 && node -v 2>/dev/null | grep -q '^v24\.'; }

if ! _tollgate_node_ok; then
  case "$(uname -m)" in
    x86_64) _tollgate_arch=x64 ;;
    aarch64 | arm64) _tollgate_arch=arm64 ;;
    *) echo "toolchain: unsupported CPU $(uname -m)" >&2; return 1 2>/dev/null || exit 1 ;;
  esac
  _tollgate_node_bin="$TOLLGATE_TOOLS/node/node_modules/node-linux-$_tollgate_arch/bin"
  if [ ! -x "$_tollgate_node_bin/node" ] || ! "$_tollgate_node_bin/node" -v | grep -q "^v$TOLLGATE_NODE_VERSION\$"; then
    command -v npm >/dev/null 2>&1 || { echo "toolchain: Node 24 is missing and there is no npm to fetch it" >&2; return 1 2>/dev/null || exit 1; }
    echo "toolchain: installing Node $TOLLGATE_NODE_VERSION into .tools/node (npm registry package node-linux-$_tollgate_arch)" >&2
    npm install --silent --no-save --no-audit --no-fund --prefix "$TOLLGATE_TOOLS/node" \
      "node-linux-$_tollgate_arch@$TOLLGATE_NODE_VERSION" >&2
  fi
  export PATH="$_tollgate_node_bin:$PATH"
fi

# pnpm's Node entry (bin/pnpm.mjs) runs the native pnpm binary as its child and does not pass
# SIGTERM on, so a supervisor stopping `pnpm ... start` would end only that entry and leave the
# service running. The shim runs the native binary itself (which forwards signals to the script)
# and keeps the Node entry as the fallback that fetches the binary on first use.
# Written to a temporary file and renamed: worktrees share .tools, and a shell that ran a half-written
# shim would see no pnpm and write it again.
_tollgate_pnpm_shim() { # target file
  cat >"$1.$$" <<SHIM
#!/usr/bin/env bash
package="$TOLLGATE_TOOLS/pnpm/node_modules/pnpm"
native="\$(node --input-type=module -e 'const m = await import(process.argv[1]); console.log(m.resolveInstalledBinary() ?? "")' "file://\$package/native-binary.mjs" 2>/dev/null)"
[ -n "\$native" ] || native="\$package/pnpm-native"
if [ -f "\$native" ] && [ -x "\$native" ]; then exec "\$native" "\$@"; fi
exec node "\$package/bin/pnpm.mjs" "\$@"
SHIM
  chmod +x "$1.$$" && mv -f "$1.$$" "$1"
}

if ! (command -v pnpm >/dev/null 2>&1 && pnpm -v 2>/dev/null | grep -q "^${TOLLGATE_PNPM_VERSION%%.*}\."); then
  if [ ! -f "$TOLLGATE_TOOLS/pnpm/node_modules/pnpm/package.json" ] ||
    ! grep -q "\"version\": \"$TOLLGATE_PNPM_VERSION\"" "$TOLLGATE_TOOLS/pnpm/node_modules/pnpm/package.json"; then
    echo "toolchain: installing pnpm $TOLLGATE_PNPM_VERSION into .tools/pnpm" >&2
    npm install --silent --no-save --no-audit --no-fund --prefix "$TOLLGATE_TOOLS/pnpm" "pnpm@$TOLLGATE_PNPM_VERSION" >&2
  fi
  mkdir -p "$TOLLGATE_TOOLS/bin"
  _tollgate_pnpm_shim "$TOLLGATE_TOOLS/bin/pnpm"
  export PATH="$TOLLGATE_TOOLS/bin:$PATH"
fi
