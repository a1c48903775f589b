#!/usr/bin/env bash
# Entra ID sign-in on a real mount, over https verified against a private CA:
# the TLS Azurite of tests/tls/fixture (--oauth basic) and the loopback token
# server (tests/tools/token_server.h). Mounts with managed identity (IMDS),
# a service principal (secret, then certificate) and the az CLI (a fake on
# PATH) write and read the same files; a slow write outlives several
# 20-second tokens; failures to sign in or to verify the server stop the
# mount with the reason. Exits 77 (ctest: skipped) when the fixture did not
# run or found something missing.
build=${1:?BUILD_DIR}
envfile=$build/azurite-tls/env
if [[ ! -s $envfile ]]; then
  echo "SKIP: the TLS Azurite is not running (run through ctest: fixture tls.azurite.start)"
  exit 77
fi
if grep -q '^SKIP=' "$envfile"; then
  echo "SKIP: $(sed -n 's/^SKIP=//p' "$envfile")"
  exit 77
fi
TLS_BLOB_ENDPOINT=$(sed -n 's/^TLS_BLOB_ENDPOINT=//p' "$envfile")
TLS_TABLE_ENDPOINT=$(sed -n 's/^TLS_TABLE_ENDPOINT=//p' "$envfile")
TLS_CA_FILE=$(sed -n 's/^TLS_CA_FILE=//p' "$envfile")

source "$(dirname "$0")/lib.bash" "$@"
# The container lives on the TLS Azurite (in memory, gone when the fixture
# stops it); stampfs_inspect would look for it on the plain one.
E2E_INSPECT=""

TOKEN_SERVER=$E2E_BUILD_DIR/tests/stampfs_token_server
[[ -x $TOKEN_SERVER ]] || e2e_fatal "token server" "$TOKEN_SERVER is not built"

section "token server"
umask 077
printf 'e2e-client-secret-%s\n' "$RANDOM$RANDOM" >"$E2E_TMP/client-secret"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$E2E_TMP/sp.key" -out "$E2E_TMP/sp.crt" \
  -days 2 -subj "/CN=stampfs-e2e-sp" 2>/dev/null || e2e_fatal "make the service principal's certificate"
cat "$E2E_TMP/sp.crt" "$E2E_TMP/sp.key" >"$E2E_TMP/sp.pem"
umask 022
"$TOKEN_SERVER" serve --port-file "$E2E_TMP/token-port" --lifetime 20 \
  --client-secret-file "$E2E_TMP/client-secret" --cert-file "$E2E_TMP/sp.pem" \
  >"$E2E_TMP/token-server.log" 2>&1 </dev/null &
token_pid=$!
for _ in $(seq 1 50); do [[ -s $E2E_TMP/token-port ]] && break; sleep 0.1; done
[[ -s $E2E_TMP/token-port ]] || e2e_fatal "token server" "did not start: $(cat "$E2E_TMP/token-server.log")"
TOKEN_URL=http://127.0.0.1:$(cat "$E2E_TMP/token-port")
trap 'kill $token_pid 2>/dev/null; _e2e_on_exit' EXIT
stat_of() { curl -s "$TOKEN_URL/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
TENANT=72f988bf-86f1-41af-91ab-2d7cd011db47
CLIENT=0b5a8a4c-1d2e-4f60-9a7b-c8d9e0f1a2b3

account="account_name=devstoreaccount1,blob_endpoint=$TLS_BLOB_ENDPOINT,table_endpoint=$TLS_TABLE_ENDPOINT"
msi="$account,ca_file=$TLS_CA_FILE,auth=msi,msi_endpoint=$TOKEN_URL/metadata/identity/oauth2/token"

section "managed identity (IMDS) over https"
E2E_MOUNT_OPTS=$msi e2e_mount
check "the mount log names the sign-in" grep -q "signed in with Microsoft Entra ID: managed identity" "${E2E_LOG[$M]}"
head -c 5000000 /dev/urandom >"$E2E_TMP/big"
check "write a 5 MB file" cp "$E2E_TMP/big" "$M/big"
check "mkdir and a small file" eval "mkdir -p '$M/d/e' && echo hello >'$M/d/e/small'"
check "the big file reads back" cmp "$E2E_TMP/big" "$M/big"
check_eq "the small file reads back" "hello" cat "$M/d/e/small"
check "rename (a server-side copy under the token)" mv "$M/d/e/small" "$M/d/moved"
check_eq "the renamed file reads back" "hello" cat "$M/d/moved"

section "a write that outlives several tokens (20 s each, replaced at half life)"
before=$(stat_of imds)
E2E_TIMEOUT=120 check "45 s of writing, 1 MiB a second, then close" eval "
  for i in \$(seq 1 45); do head -c 1048576 /dev/urandom; sleep 1; done | tee '$E2E_TMP/slow' >'$M/slow'"
check "the slow file reads back" cmp "$E2E_TMP/slow" "$M/slow"
after=$(stat_of imds)
check "tokens were replaced during the write (at least 4 more: $before -> $after)" test $((after - before)) -ge 4
check_eq "the token endpoint refused nothing" "0" stat_of refused
e2e_unmount

section "service principal: client secret, then certificate"
E2E_MOUNT_OPTS="$account,ca_file=$TLS_CA_FILE,auth=sp,tenant_id=$TENANT,client_id=$CLIENT,authority_host=$TOKEN_URL,client_secret_file=$E2E_TMP/client-secret"
e2e_new_cache
e2e_mount
check "what managed identity wrote reads back" cmp "$E2E_TMP/big" "$M/big"
check "write with the service principal" eval "echo sp >'$M/d/sp'"
check "a token came through the secret" test "$(stat_of secret)" -ge 1
e2e_unmount
E2E_MOUNT_OPTS="$account,ca_file=$TLS_CA_FILE,auth=sp,tenant_id=$TENANT,client_id=$CLIENT,authority_host=$TOKEN_URL,client_cert_file=$E2E_TMP/sp.pem"
e2e_new_cache
e2e_mount
check_eq "the certificate's mount reads the secret's file" "sp" cat "$M/d/sp"
check "a token came through the signed assertion" test "$(stat_of certificate)" -ge 1
e2e_unmount

section "az CLI (a fake on PATH), auth=auto"
mkdir -p "$E2E_TMP/bin"
ln -s "$TOKEN_SERVER" "$E2E_TMP/bin/az"
# auto: no service principal configured; managed identity answers 404 here.
E2E_MOUNT_OPTS="$account,ca_file=$TLS_CA_FILE,msi_endpoint=$TOKEN_URL/none"
e2e_new_cache
PATH=$E2E_TMP/bin:$PATH FAKE_AZ_LOG=$E2E_TMP/az.log e2e_mount
check "auto chose the az CLI" grep -q "signed in with Microsoft Entra ID: auto: Azure CLI" "${E2E_LOG[$M]}"
check "az was asked for a token" test -s "$E2E_TMP/az.log"
check_eq "the file list is complete" "big d slow" eval "ls '$M' | tr '\n' ' ' | sed 's/ \$//'"
check "rm over the CLI's token" rm "$M/slow"
e2e_unmount

section "failures stop the mount with the reason"
mkdir -p "$E2E_TMP/m2"
check_fails "a wrong client secret" "AADSTS7000215" \
  eval "printf 'wrong\n' >'$E2E_TMP/wrong' && chmod 600 '$E2E_TMP/wrong' &&
        timeout 60 '$E2E_STAMPFS' mount -f -o '$account,ca_file=$TLS_CA_FILE,auth=sp,tenant_id=$TENANT,client_id=$CLIENT,authority_host=$TOKEN_URL,client_secret_file=$E2E_TMP/wrong,cache_dir=$E2E_TMP/c2' $E2E_CONTAINER '$E2E_TMP/m2' 2>&1"
check_fails "no ca_file: the private CA's certificate is refused" "certificate|SSL" \
  eval "timeout 60 '$E2E_STAMPFS' mount -f -o '$msi,ca_file=,cache_dir=$E2E_TMP/c3' $E2E_CONTAINER '$E2E_TMP/m2' 2>&1"
check_fails "a secret file others can read" "chmod 600" \
  eval "chmod 644 '$E2E_TMP/wrong' && timeout 60 '$E2E_STAMPFS' mount -f -o '$account,auth=sp,tenant_id=$TENANT,client_id=$CLIENT,client_secret_file=$E2E_TMP/wrong,cache_dir=$E2E_TMP/c4' $E2E_CONTAINER '$E2E_TMP/m2' 2>&1"

section "no token or secret in any log"
secret=$(cat "$E2E_TMP/client-secret")
check "no daemon log holds a JWT or the client secret" eval "! grep -l -e 'eyJ' -e '$secret' $E2E_TMP/stampfs.*.log"

e2e_finish
