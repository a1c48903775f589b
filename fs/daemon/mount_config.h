// The config file of a mount (`stampfs mount --config FILE`, or
// `-o config=FILE` from fstab and systemd) and the storage account the mount
// options name.
//
// Format: one `key = value` a line. Blank lines and lines whose first
// non-blank character is '#' are ignored; spaces around key and value are
// dropped; a value may be wrapped in double quotes. Keys:
//   container, mountpoint            what `stampfs mount CONTAINER MOUNTPOINT` takes
//   every -o option with a value     attr_timeout, cache_dir, cache_size, ... (mount_options.h)
//   the -o flags, with true/false    ro, allow_other, allow_http, debug, nosuid, nodev, noexec
//   options                          an -o list as is ("nosuid,nodev,attr_timeout=5")
//   account_key, sas_token, connection_string
//                                    secrets: allowed here only, and then the
//                                    file must not be readable by group or others
// The command line overrides the file. Unknown keys are errors (a typo must
// not silently mount with defaults).
#pragma once

#include <string>

#include "fs/daemon/mount_options.h"
#include "storage/connection_string.h"
#include "storage/status.h"

namespace stampfs {

Status ApplyConfigFile(const std::string& path, MountOptions* o);
// The same over text already read; `private_file` says whether group and
// others are kept out of the file (it may then hold secrets).
Status ApplyConfigText(const std::string& text, const std::string& name, bool private_file,
                       MountOptions* o);

// Refuses (kInvalidArgument, with the fix in the message) a file that holds a
// secret and that group or others may read. `what` names it: "account key file".
Status CheckSecretFileMode(const std::string& path, const std::string& what);

// The account the options name, credentials read from their files (each
// checked with CheckSecretFileMode):
//   connection_string_file / connection_string, else
//   account_name with account_key_file / account_key or sas_token_file /
//   sas_token (+ table_sas_token_file), endpoints from blob_endpoint,
//   table_endpoint or endpoint_suffix, else
//   $AZURE_STORAGE_CONNECTION_STRING, else UseDevelopmentStorage=true.
// Endpoints must pass CheckEndpointsSecure (allow_http). An account with
// neither key nor SAS signs in with Microsoft Entra ID (auth=, tenant_id=,
// ... and the environment DefaultAzureCredential reads): the first token is
// fetched here, so a mount that cannot sign in fails with the reason.
// ca_file is checked readable and carried in the account.
Result<StorageAccount> LoadAccount(const MountOptions& o);

// Checks o.auth against the account's credentials and, for an account with
// neither key nor SAS, signs in with Entra ID (fetching the first token).
Status SignIn(const MountOptions& o, StorageAccount* account);

std::string ConfigFileHelp();

}  // namespace stampfs
