// What a read-only mount learns of other tools' changes, kept over the table
// it cannot write (issue 30; docs/design.md, "Other tools' changes"): a
// TableStore that reads through to the mount's table and keeps every write
// in memory, so DirRefresher (fs/admin/dir_refresh.h) adopts new, changed
// and deleted blobs for a read-only mount exactly as for a writable one,
// and the namespace shows them.
//
// Rules:
// - A row written here (an entity, or a deletion) hides the stored row it
//   was written over, only while the stored row is that one: once the
//   stored row changes (its ETag differs from the one seen at the write, or
//   a row appears where there was none) the stored row wins, and the
//   overlay's is dropped. A writable mount or an import that adopts the
//   same blob later is the truth.
// - A directory's "." row: the stored one with an ETag that also carries
//   the overlay's generation of the partition (bumped by every write to
//   it), so a cached listing is revalidated after either changes; a
//   directory only the overlay made has its own "." row.
// - A partition query of a directory the overlay changed is answered in one
//   page: the stored pages merged with the overlay's rows.
// - ~fs/ino-counter: the overlay numbers its own inodes from 2^48, far above
//   any the table hands out, so they never meet.
// Only `table` is overlaid; other tables pass through. Nothing persists: a
// restarted mount checks its directories again.
#pragma once

#include <memory>
#include <string>

#include "storage/table_store.h"

namespace stampfs {

inline constexpr uint64_t kOverlayFirstIno = uint64_t{1} << 48;

std::unique_ptr<TableStore> MakeOverlayTable(TableStore& stored, const std::string& table);

}  // namespace stampfs
