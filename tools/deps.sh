#!/bin/sh
# Install the Debian packages the build needs, only those missing.
need=""
for p in gcc make libjansson-dev liburing-dev libssl-dev unicode-data; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "installing missing packages:$need" >&2
if [ "$(id -u)" != 0 ]; then echo "error: missing packages:$need (run as root or install them)" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq $need >/dev/null || { echo "error: apt-get install$need failed" >&2; exit 1; }
