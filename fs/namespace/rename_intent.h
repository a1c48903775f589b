// The intent row of a rename (docs/design.md, "Rename"): written to the
// ~intents partition before a rename changes anything, deleted after its last
// step. While it exists, the rename is decided but maybe unfinished: the
// next mount (at start) or `stampfs fsck --repair` finishes it with the same
// idempotent steps (Namespace::FinishRename).
//
// RowKey: "<created ns, 20 digits>-<16 hex random>". Properties: op
// ("rename"), from/to (Binary paths), ino, dir and noreplace (0/1),
// replaced (inode of the target the rename replaces, 0: none),
// blob/betag (the source file's committed blob when the intent was written),
// host, pid, mount (who wrote it: a live mount's intents are not taken over
// by another mount before `grace`), created (ns).
// An exchange (RENAME_EXCHANGE, op "exchange") also has ino2, blob2, betag2:
// the entry at `to` when it was decided (fs/namespace/namespace_exchange.cc). An
// exchange across two directories (op "exchange-across") also keeps the
// entry at `from` as it was decided: its properties as "s_<name>" and its ETag as "setag" (the only
// copy of that entry once `from` holds the other one; fs/namespace/namespace_xexchange.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "storage/status.h"
#include "storage/table_store.h"

namespace stampfs {

inline constexpr const char* kExchangeAcrossOp = "exchange-across";

// The entry property naming the intent that claimed the entry for a rename.
inline constexpr const char* kRenamingProperty = "renaming";

struct RenameIntent {
  std::string id;
  std::string from;  // path of the source ("/a/x")
  std::string to;    // path of the target
  uint64_t ino = 0;  // the renamed entry's inode
  // RENAME_EXCHANGE: `ino`/`blob`/`betag` were at `from` and these at `to`.
  bool exchange = false;
  uint64_t ino2 = 0;
  std::string blob2, betag2;
  // Across two directories: the entry at `from` (its properties, without a
  // claim) and the ETag of the row they were read from.
  std::map<std::string, PropertyValue> stash;
  std::string stash_etag;
  bool Across() const;  // an exchange of entries of two directories
  bool is_dir = false;
  bool no_replace = false;
  uint64_t replaced_ino = 0;  // the target entry the rename was decided to replace (0: none)
  std::string blob;           // files: the source blob and its ETag at the start
  std::string betag;
  std::string host;
  int64_t pid = 0;
  std::string mount;  // id of the Namespace instance that wrote it
  int64_t created_ns = 0;

  std::string Describe() const;  // "rename /a/x -> /b/y (file, ino 17)", "exchange /a/x <-> /a/y"
};

// The temporary blob an exchange of two files with data parks one blob
// under (".stampfs-exchange/<intent id>"), never a file of its own.
std::string ExchangeTempBlob(const std::string& intent_id);
bool IsExchangeTempBlob(const std::string& blob);

// A new id, ordered by creation time.
std::string NewIntentId(int64_t now_ns);
Entity IntentToEntity(const RenameIntent& intent);
// kInvalidArgument when the row is not a rename intent this version knows.
Result<RenameIntent> IntentFromEntity(const Entity& row);

}  // namespace stampfs
