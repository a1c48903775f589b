#!/usr/bin/env bash
# scripts/azurite refuses to start where something already answers on its
# ports (an Azurite of another checkout kept port 10000 once, and a test
# run used its data). Ports 10020-10022: apart from the suites' own.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
[[ -x $root/node_modules/.bin/azurite ]] || { echo "SKIP: Azurite is not installed"; exit 77; }
work=$(mktemp -d)
export AZURITE_BLOB_PORT=10020 AZURITE_QUEUE_PORT=10021 AZURITE_TABLE_PORT=10022 AZURITE_IN_MEMORY=1
trap 'AZURITE_DIR=$work/first "$root/scripts/azurite" stop >/dev/null 2>&1; rm -rf "$work"' EXIT
fail=0
AZURITE_DIR=$work/first "$root/scripts/azurite" start || { echo "FAIL: the first start"; exit 1; }
if AZURITE_DIR=$work/second "$root/scripts/azurite" start 2>"$work/err"; then
  echo "FAIL: a second Azurite 'started' on ports another one holds"
  AZURITE_DIR=$work/second "$root/scripts/azurite" stop
  fail=1
elif ! grep -q "already answers on 127.0.0.1:10020" "$work/err"; then
  echo "FAIL: the refusal does not say why:"; cat "$work/err"; fail=1
else
  echo "ok: the second start is refused: $(head -1 "$work/err")"
fi
AZURITE_DIR=$work/first "$root/scripts/azurite" status >/dev/null || { echo "FAIL: the first one stopped"; fail=1; }
AZURITE_DIR=$work/first "$root/scripts/azurite" start | grep -q "already running" ||
  { echo "FAIL: a start where its own pid file lives is not 'already running'"; fail=1; }
exit $fail
