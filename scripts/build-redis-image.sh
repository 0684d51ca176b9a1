#!/usr/bin/env bash
# Build a Redis image without a registry: a root filesystem holding the distro's redis-server
# and the libraries ldd lists, imported with `docker import` and tagged $1. An image of the
# same binary already under that tag is kept (reruns leave no dangling images behind).
set -euo pipefail
tag=${1:?usage: build-redis-image.sh TAG}
binary=$(command -v redis-server) || { echo "redis-server not found (apt-get install redis-server)" >&2; exit 2; }
version=$("$binary" --version | grep -oE 'v=[0-9.]+' | cut -d= -f2)
digest=$(sha256sum "$(readlink -f "$binary")" | cut -c1-16)
comment="redis-server $version from the distro, sha256 $digest"
if [ "$(docker image inspect -f '{{.Comment}}' "$tag" 2>/dev/null)" = "$comment" ]; then
  echo "$tag is up to date (redis-server $version)"
  exit 0
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root/usr/bin" "$root/tmp" "$root/data"
chmod 1777 "$root/tmp"
cp -L "$binary" "$root/usr/bin/redis-server"
for lib in $(ldd "$binary" | grep -oE '/[^ ]+'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/bin:/bin' --change 'WORKDIR /data' --change 'CMD ["redis-server"]' \
  --message "$comment" - "$tag" >/dev/null
echo "built $tag (redis-server $version)"
