#!/usr/bin/env bash
# Builds the Dockerfile's base image, debian:bookworm-slim, from Debian's own packages (debootstrap +
# `docker import`), for machines that reach Debian's mirror but no container registry. The image is
# tagged with the exact name the Dockerfile's FROM uses, so `docker build` finds it locally; an image
# already under that tag is kept (built once per machine).
#
#   deploy/build-base-image.sh [TAG]     (default debian:bookworm-slim; needs root and debootstrap)
#
# DEBIAN_MIRROR and DEBIAN_SECURITY_MIRROR choose the mirrors (default: deb.debian.org).
set -euo pipefail

tag="${1:-debian:bookworm-slim}"
suite=bookworm
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "$tag is already there"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "error: debootstrap needs root" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2
    exit 1
fi

rootfs="$(mktemp -d "${TMPDIR:-/tmp}/pitcrew-rootfs.XXXXXX")"
trap 'rm -rf "$rootfs"' EXIT

# minbase: only the Essential packages and apt, as the official slim image.
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
    tail -n 30 "$rootfs.log" >&2
    rm -f "$rootfs.log"
    exit 1
}
rm -f "$rootfs.log"

# The sources the official image ships (updates and security too), in deb822 form.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
# Like the official image: no recommends, no cached .debs, no docs or translations in later layers.
cat >"$rootfs/etc/apt/apt.conf.d/docker-slim" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };
APT
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
DPKG
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log "$rootfs"/tmp/*
find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright -type f -delete 2>/dev/null || true
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
# The machine's identity is the container's own.
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/resolv.conf"

tar --numeric-owner -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    - "$tag" >/dev/null
echo "built $tag from $mirror"
