// The command line of `stampfs mount` and its -o options.
//
//   stampfs mount [-f] [-o OPT[,OPT...]] [--connection-string-file FILE]
//                 CONTAINER MOUNTPOINT
//
// Secrets are never accepted on the command line (ps shows it): the
// connection string comes from --connection-string-file /
// -o connection_string_file=, or $AZURE_STORAGE_CONNECTION_STRING, or the
// default UseDevelopmentStorage=true.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/status.h"

namespace stampfs {

struct MountOptions {
  std::string container;
  std::string mountpoint;
  bool foreground = false;
  bool read_only = false;
  bool allow_other = false;
  double attr_timeout = 2.0;  // seconds: metadata trusted this long, then revalidated
  double offline_after = 5.0;  // seconds a revalidation waits before the cached copy serves
  std::string cache_dir;      // default: DefaultCacheDir(account, container)
  std::string table;          // default: DefaultTableName(container)
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> umask;
  std::string config_file;  // --config FILE / -o config=FILE (fs/daemon/mount_config.h)
  // The connection: a connection string file, or an account with a key file
  // or SAS token files. Secrets only ever come from files.
  std::string connection_string_file;
  std::string account_name;
  std::string account_key_file;
  std::string sas_token_file;        // account SAS, or a container SAS for the blob service
  std::string table_sas_token_file;  // the table's own SAS (with a container SAS)
  std::string blob_endpoint;         // default https://ACCOUNT.blob.SUFFIX
  std::string table_endpoint;
  std::string queue_endpoint;        // -o events: default from the account        // default
                                     // https://ACCOUNT.table.SUFFIX
  std::string endpoint_suffix;       // default core.windows.net
  bool allow_http = false;           // plain http to a host that is not loopback
  std::string ca_file;               // a private CA bundle for https (curl CAINFO)
  // Microsoft Entra ID sign-in (storage/entra_credential.h); the secret only
  // from a file or $AZURE_CLIENT_SECRET.
  std::string auth = "auto";         // auto | key | sas | msi | workload | sp | cli
  std::string tenant_id;             // default $AZURE_TENANT_ID
  std::string client_id;             // default $AZURE_CLIENT_ID
  std::string client_secret_file;    // mode 0600
  std::string client_cert_file;      // PEM certificate + private key, mode 0600
  std::string federated_token_file;  // default $AZURE_FEDERATED_TOKEN_FILE
  std::string authority_host;  // default $AZURE_AUTHORITY_HOST, else login.microsoftonline.com
  std::string msi_endpoint;    // default IMDS (or $IDENTITY_ENDPOINT)
  std::string token_resource;  // default https://storage.azure.com
  double token_refresh_margin = 300;  // seconds before expiry a token is replaced
  bool dir_markers = false;          // mkdir also writes blobfuse's hdi_isfolder marker blob
  // Secrets written in the config file itself (which must then be mode 0600).
  std::string inline_connection_string;
  std::string inline_account_key;
  std::string inline_sas_token;
  double shutdown_timeout = 30.0;  // seconds to commit dirty files at unmount
  double discover = 0;             // seconds between imports of foreign blobs (0: never)
  // A directory read is checked against its blobs at most this often (0: never).
  double foreign_ttl = 30;
  // -o events=QUEUE (events_queue = in a config file): Event Grid blob events
  // of the container, from this storage queue of the account ("": none).
  std::string events_queue;
  std::string log_level = "info";
  uint64_t cache_size = 1ull << 30;  // block cache cap in bytes (-o cache_size=SIZE)
  uint64_t block_size = 4ull << 20;  // base block size of new files (-o block_size=SIZE)
  std::string conflict = "copy";     // copy | fail | overwrite (-o conflict=)
  bool async_commit = true;          // -o commit=async (default) | close
  double commit_delay = 0.5;         // seconds from the last close to an async commit
  int commit_threads = 16;           // async: pipeline uploads in flight at once
  uint32_t dir_readahead = 32;       // small files fetched ahead of an in-order reader (0: off)
  uint64_t dir_readahead_size = 1ull << 20;  // the largest file fetched ahead
  // Options passed to the kernel mount as they are (nosuid, nodev, noexec, ...).
  std::vector<std::string> kernel_options;
};

// Parses the arguments after "mount". Errors name the offending option.
// A config file (--config FILE or -o config=FILE) is applied first, whatever
// its place; the command line then overrides it. CONTAINER and MOUNTPOINT may
// come from the config file (`container =`, `mountpoint =`).
Result<MountOptions> ParseMountArgs(const std::vector<std::string>& args);
// Applies one "-o" list ("ro,attr_timeout=5,...") to `options`.
Status ApplyOptionList(const std::string& list, MountOptions* options);
// Applies a flag option (ro, allow_other, allow_http, debug, or a kernel flag
// such as nosuid) set `on` or off; false when `key` is not one.
bool ApplyFlag(const std::string& key, bool on, MountOptions* options);

// "4096", "64K", "256M", "1G", "2T" (binary multiples) as bytes.
Result<uint64_t> ParseByteSize(const std::string& key, const std::string& value);

// Container names: 3-63 of [a-z0-9-], starting and ending alphanumeric, no "--".
Status CheckContainerName(const std::string& name);
// "fs" + the container name's letters and digits (+ a hash when it had
// hyphens, so "a-b" and "ab" differ): a valid table name.
std::string DefaultTableName(const std::string& container);
// $XDG_CACHE_HOME/stampfs/ACCOUNT/CONTAINER, else ~/.cache/..., else
// /var/cache/stampfs/... for root.
std::string DefaultCacheDir(const std::string& account, const std::string& container);

std::string MountUsage();

}  // namespace stampfs
