// What a read-only mount sees of unfinished renames.
//
// A read-only mount (-o ro, or a SAS without write permission) cannot roll
// an unfinished rename forward (fs/namespace/rename_intent.h): a crashed mount's intent
// stays until a read-write mount starts or `stampfs fsck --repair` runs. The
// table then holds a half-moved state: a file may be entered at both names,
// a directory's entries may be partly in the old partitions (closed, so the
// old name no longer lists) and partly in the new ones, with no entry at the
// new name yet. Read as stored, such a tree shows entries twice or not at all.
//
// MakeRollForwardView wraps the mount's TableStore and answers reads as if
// every unfinished rename in ~intents were rolled forward (for the renames a
// roll-forward finishes; one it would drop, because the target was taken by
// something it may not replace, is shown as stored):
// - the source entry is hidden from its directory, the target shows the
//   renamed entry (the stored target once it has the renamed inode; until
//   then the source entry under the new name, naming its blob, which stays
//   until the table has moved);
// - a directory's partitions below the new name are the union of the new
//   partition and the old one (rows already moved win; a row not moved yet
//   still names its old blob, which is deleted only after the new row is
//   written), with a "." row that exists while either does; partitions
//   below the old name are empty.
// The "." ETags of every partition the view changes carry the intents that
// changed them, so cached listings are revalidated when an intent appears
// or goes. The intents are read again at most every `refresh_ms` (one query
// of ~intents, plus two reads per unfinished rename); the rows they touch are
// read live. Writes pass through unchanged (the mount does not write).
//
// Not covered: renames whose paths overlap another unfinished rename's, and
// directories whose partition key is hashed (paths over about 500
// characters) are shown as stored. Each unfinished rename is logged: as a
// warning when the mount starts or once it is over a minute old (a crashed
// mount's), else at debug level (a live mount's rename in progress).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "storage/table_store.h"

namespace stampfs {

struct RollForwardViewOptions {
  std::string table;                // the stampfs table (other tables pass through)
  int64_t refresh_ms = 1000;        // read ~intents again after this long
  std::function<int64_t()> now_ms;  // clock (tests); default: steady clock
};

std::unique_ptr<TableStore> MakeRollForwardView(TableStore& inner, RollForwardViewOptions options);

}  // namespace stampfs
