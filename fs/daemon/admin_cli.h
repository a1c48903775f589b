// The command lines of `stampfs import` and `stampfs fsck` (fs/admin/import.h,
// fs/admin/fsck.h), and the automatic import of a first mount.
//
//   stampfs import CONTAINER [--refresh] [--table NAME] [--connection-string-file FILE]
//   stampfs fsck CONTAINER [--repair] [--table NAME] [--connection-string-file FILE]
//
// The connection string comes from --connection-string-file, else
// $AZURE_STORAGE_CONNECTION_STRING, else UseDevelopmentStorage=true, as for
// mount. On a terminal (stderr) a progress line is rewritten in place;
// otherwise only the report is printed (stdout): one line per blob not
// imported or per finding, then one summary line.
//
// Exit status: import 0 when every blob has its entry, 1 when some blobs
// could not be mapped or some writes failed, 2 when it could not run; fsck 0
// when clean (or everything found was repaired), 1 when problems remain, 2
// when it could not check (unreachable endpoint, missing container/table).
#pragma once

#include <string>
#include <vector>

#include "storage/azure_clients.h"
#include "storage/blob_store.h"
#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

// The request policy of the stampfs commands (mount, import, fsck): 20 s an
// attempt, 45 s a request with its retries, and a breaker per endpoint that
// fails requests fast while the service is away (storage/circuit_breaker.h).
ClientOptions CommandClientOptions();

int ImportCommand(const std::vector<std::string>& args);
int FsckCommand(const std::vector<std::string>& args);
std::string AdminUsage();

// For the mount path, after Namespace::Init: imports the container when
// Importer::ShouldAutoImport says so (a new table over a container with
// blobs, or an import that did not finish), logging a summary and every
// blob not imported. Fails only when the import could not run or a write
// failed. `lazily` (-o foreign_ttl): nothing is imported up front unless
// the container holds blobs stampfs wrote (a table lost: only an import
// adopts those); each directory is adopted when first read instead.
Status AutoImportIfNeeded(TableStore& table, BlobStore& blobs, const std::string& container,
                          const std::string& table_name, bool lazily);

}  // namespace stampfs
