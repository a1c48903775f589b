# shellcheck shell=bash
# An Azurite of the calling e2e script's own, so that stopping or freezing
# it (SIGSTOP) touches no other test running in parallel. Source it before
# lib.bash, then:
#
#   private_azurite_start NAME BASE PORT_VARIABLE
#
# starts Azurite on ports BASE (blob), BASE+1 (queue), BASE+2 (table) with its
# data in a new temporary directory (AZURITE_IN_MEMORY and
# AZURITE_EXTENT_MEMORY_MB as the caller exported them), exports AZURITE_DIR,
# the AZURITE_*_PORT variables and AZURE_STORAGE_CONNECTION_STRING for it,
# and sets AZ_PID. A guard stops it (thawed first, in case it is frozen) once
# the calling shell has ended, whatever way it ends. Exits 2 when the ports
# stay taken (an earlier run's Azurite goes a second or two after that run
# ends: it is waited for, not talked to; PORT_VARIABLE names the setting that
# moves them) or Azurite does not start.
private_azurite_start() {
  local name=$1 base=$2 setting=$3 root _
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  export AZURITE_BLOB_PORT=$base AZURITE_QUEUE_PORT=$((base + 1)) AZURITE_TABLE_PORT=$((base + 2))
  export AZURITE_DIR
  AZURITE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stampfs-$name-azurite.XXXXXX")
  local key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # the emulator's public key
  export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$AZURITE_BLOB_PORT/devstoreaccount1;TableEndpoint=http://127.0.0.1:$AZURITE_TABLE_PORT/devstoreaccount1;QueueEndpoint=http://127.0.0.1:$AZURITE_QUEUE_PORT/devstoreaccount1"
  for _ in $(seq 100); do
    _private_azurite_ports_taken "$base" || break
    sleep 0.1
  done
  if _private_azurite_ports_taken "$base"; then
    echo "$name: ports $base-$((base + 2)) are taken (another Azurite?); set $setting" >&2
    rm -rf "$AZURITE_DIR"
    exit 2
  fi
  if ! "$root/scripts/azurite" start >/dev/null; then
    echo "$name: cannot start Azurite on ports $base-$((base + 2))" >&2
    rm -rf "$AZURITE_DIR"
    exit 2
  fi
  AZ_PID=$(cat "$AZURITE_DIR/azurite.pid")
  bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -CONT "$3" 2>/dev/null; "$2" stop >/dev/null 2>&1; rm -rf "$AZURITE_DIR"' \
    "$name-guard" $$ "$root/scripts/azurite" "$AZ_PID" </dev/null >/dev/null 2>&1 &
}

_private_azurite_ports_taken() {
  local p
  for p in "$1" $(($1 + 1)) $(($1 + 2)); do
    (: >"/dev/tcp/127.0.0.1/$p") 2>/dev/null && return 0
  done
  return 1
}
