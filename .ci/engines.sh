# Sourced by .ci/run: installs (Debian packages, when missing) and starts the engines the
# backend tests run against, each on 127.0.0.1 with its data in a temporary directory, and
# exports where they are (bubblewrap, for the sandbox's tests, is only installed):
#
#   LWIRC_TEST_OCI        oci+http://127.0.0.1:PORT   a CNCF Distribution registry, no auth
#   LWIRC_TEST_OCI_DATA   its filesystem storage (the tamper tests change a blob there)
#   LWIRC_TEST_POSTGRES   postgres://lwir@127.0.0.1:PORT/postgres   a throwaway cluster
#   LWIRC_TEST_MCP_EVERYTHING  the dist/index.js of @modelcontextprotocol/server-everything
#   LWIRC_TEST_MCP_TIME   the mcp-server-time program (in its own virtualenv)
#   LWIRC_REQUIRE_ENGINES 1: a test that would skip for want of an engine fails instead
#
# `engines_stop` (run on exit by .ci/run) stops them and removes their data.

as_root=""
[ "$(id -u)" -eq 0 ] || as_root=sudo

# install PACKAGE COMMAND: installs Debian's PACKAGE unless COMMAND is there.
install_package() {
    command -v "$2" > /dev/null && return 0
    $as_root apt-get install -y -qq --no-install-recommends "$1" > /dev/null 2>&1 \
        || { $as_root apt-get update -qq && $as_root apt-get install -y -qq --no-install-recommends "$1" > /dev/null; }
}

# free_port: a TCP port nothing listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

engines_dir=$(mktemp -d)
chmod 755 "$engines_dir"
registry_pid=""
pg_bin=""

engines_stop() {
    # Everything is tried, whatever fails (this runs on exit, under `set -e`).
    if [ -n "$registry_pid" ]; then
        kill "$registry_pid" 2> /dev/null || true
        wait "$registry_pid" 2> /dev/null || true
    fi
    if [ -n "$pg_bin" ] && [ -f "$engines_dir/pg/data/postmaster.pid" ]; then
        as_pg "$pg_bin/pg_ctl" -D "$engines_dir/pg/data" -m immediate stop > /dev/null 2>&1 || true
    fi
    rm -rf "$engines_dir" || true
}

install_package docker-registry docker-registry
install_package postgresql /usr/lib/postgresql/15/bin/postgres
install_package skopeo skopeo
# The sandbox (crates/lwir-sandbox) runs commands under bubblewrap; its tests may not skip.
install_package bubblewrap bwrap

# The registry: its own config, on loopback, no auth section, filesystem storage.
registry_port=$(free_port)
mkdir -p "$engines_dir/registry/data"
cat > "$engines_dir/registry/config.yml" <<YAML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $engines_dir/registry/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$registry_port
YAML
docker-registry serve "$engines_dir/registry/config.yml" > "$engines_dir/registry/log" 2>&1 &
registry_pid=$!
# up URL: whether URL answers 200.
up() {
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2> /dev/null
}
for _ in $(seq 100); do
    up "http://127.0.0.1:$registry_port/v2/" && break
    sleep 0.1
done
up "http://127.0.0.1:$registry_port/v2/" \
    || { cat "$engines_dir/registry/log"; echo "the registry did not start"; exit 1; }
export LWIRC_TEST_OCI="oci+http://127.0.0.1:$registry_port"
export LWIRC_TEST_OCI_DATA="$engines_dir/registry/data"

# PostgreSQL: a throwaway cluster (as user postgres when running as root: initdb refuses
# root), trust authentication on loopback, its socket in its own directory.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
pg_port=$(free_port)
mkdir -p "$engines_dir/pg"
[ "$(id -u)" -eq 0 ] && chown postgres "$engines_dir/pg"
as_pg "$pg_bin/initdb" -D "$engines_dir/pg/data" -U lwir --auth=trust > "$engines_dir/pg/initdb.log" 2>&1 \
    || { cat "$engines_dir/pg/initdb.log"; echo "initdb failed"; exit 1; }
as_pg "$pg_bin/pg_ctl" -D "$engines_dir/pg/data" -w -l "$engines_dir/pg/log" \
    -o "-p $pg_port -h 127.0.0.1 -k $engines_dir/pg -c fsync=off -c max_connections=200" start > /dev/null \
    || { cat "$engines_dir/pg/log"; echo "PostgreSQL did not start"; exit 1; }
export LWIRC_TEST_POSTGRES="postgres://lwir@127.0.0.1:$pg_port/postgres"

# Real MCP servers nobody here wrote, pinned, for lwir-mcp's tests (they speak stdio; the
# tests start them).
install_package nodejs node
install_package npm npm
mkdir -p "$engines_dir/mcp"
npm install --prefix "$engines_dir/mcp" --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-everything@2026.8.31 > "$engines_dir/mcp/npm.log" 2>&1 \
    || { cat "$engines_dir/mcp/npm.log"; echo "npm could not install server-everything"; exit 1; }
# Debian ships venv apart from Python (python3-venv): installed when python3 lacks it.
python3 -m venv "$engines_dir/mcp/venv" 2> /dev/null || {
    $as_root apt-get install -y -qq --no-install-recommends python3-venv > /dev/null 2>&1 \
        || { $as_root apt-get update -qq && $as_root apt-get install -y -qq --no-install-recommends python3-venv > /dev/null; }
    python3 -m venv "$engines_dir/mcp/venv"
}
"$engines_dir/mcp/venv/bin/pip" install -q --disable-pip-version-check mcp-server-time==2026.10.19 \
    > "$engines_dir/mcp/pip.log" 2>&1 \
    || { cat "$engines_dir/mcp/pip.log"; echo "pip could not install mcp-server-time"; exit 1; }
export LWIRC_TEST_MCP_EVERYTHING="$engines_dir/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
export LWIRC_TEST_MCP_TIME="$engines_dir/mcp/venv/bin/mcp-server-time"

export LWIRC_REQUIRE_ENGINES=1
echo "engines: registry $LWIRC_TEST_OCI, PostgreSQL $LWIRC_TEST_POSTGRES, MCP servers in $engines_dir/mcp"
