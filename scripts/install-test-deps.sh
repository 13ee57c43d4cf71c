#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine of the project's kind:
# the real Kafka clients the end-to-end tests drive, and a browser for the console's pages. Idempotent; safe to run repeatedly.
set -euo pipefail
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
# openssl and curl: the walk-through of docs/operations.md that test/e2e runs as it stands.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
# chromium: the web console's end-to-end test loads every page in a real headless browser.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# Go modules (franz-go, sarama and the rest) come from the module proxy on first build.
go mod download
