#!/usr/bin/env bash
# build-image.sh OUT [CLI_VERSION] — build Tether's container image as an OCI
# image layout in the folder OUT, without Docker or any container runtime.
#
# It builds a static tether binary, installs the pinned CLI into its cache
# (scripts/install-cli.sh), downloads the base's Debian packages into
# ${XDG_CACHE_HOME:-~/.cache}/tether/debs (apt-get download; needs apt and
# `apt-get update` once) and assembles the layers (package internal/ociimage).
# Files and the image carry $SOURCE_DATE_EPOCH (default 0) as their time, so
# the same inputs give the same digests.
#
# Load or push the result with any OCI tool, e.g.
#   skopeo copy oci:OUT docker-daemon:tether:VERSION
#   skopeo copy oci:OUT docker://REGISTRY/tether:VERSION
#   podman load -i OUT   (or: podman pull oci:OUT)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/build-image.sh OUT [CLI_VERSION]}
cli_version=${2:-2.1.197}

version=$(go run ./cmd/tether version | awk '{print $2}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$tmp/tether" ./cmd/tether
cli=$(scripts/install-cli.sh "$cli_version")
go run ./internal/ociimage/cmd -out "$out" -tether "$tmp/tether" \
  -cli "$cli" -cli-version "$cli_version" -version "$version" -ref "$version" \
  ${TETHER_IMAGE_SOURCE:+-source "$TETHER_IMAGE_SOURCE"}
