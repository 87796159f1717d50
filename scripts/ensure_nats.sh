#!/usr/bin/env bash
# The pool bridge test needs a NATS server with JetStream: the one on 127.0.0.1:4222, or a private one it starts
# from Debian's nats-server package. Install the package when neither is there.
set -euo pipefail
if [ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null 2>&1; then exit 0; fi
if (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then exit 0; fi
echo "Installing Debian's nats-server for the pool bridge test..."
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nats-server >/dev/null
