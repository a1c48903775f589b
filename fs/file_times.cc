// Times set while a file is open (futimens before close, as tar x and cp -a
// do): the open copy's mtime is what its commit writes and what stat shows.
#include "fs/file_data.h"

namespace stampfs {

void FileData::SetMtime(uint64_t ino, int64_t mtime_ns) {
  FilePtr f = Find(ino);
  if (!f) return;
  std::lock_guard<std::mutex> lock(f->mu);
  if (f->loaded) f->mtime_ns = mtime_ns;
}

}  // namespace stampfs
