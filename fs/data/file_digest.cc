// The Content-MD5 of a block-list commit, when it costs no download: Put
// Blob gets one from the service, but Put Block List stores only what the
// client sends, so without this `rclone check` and azcopy cannot verify a
// large file. Read from the cache file just before the commit.
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "fs/data/file_data.h"
#include "fs/data/pin_range.h"
#include "storage/content_md5.h"

namespace stampfs {

// "" when a block of the content is neither cached (clean, dirty or staged)
// nor a hole past the remote size: recomputing would need a full read.
// REQUIRES: f.mu held; f.busy (the bytes cannot change).
std::string FileData::LocalContentMd5(const OpenFile& f) {
  const uint64_t count = f.layout.CountFor(f.size);
  if (count == 0) return ContentMd5::Of("");
  PinRange pins(cache_, f.cache_id, 0, count - 1);  // clean blocks are not evicted meanwhile
  const auto states = cache_.Blocks(f.cache_id);
  for (uint64_t k = 0; k < count; ++k) {
    const auto it = states.find(k);
    const bool cached = it != states.end() && it->second != BlockState::kAbsent;
    if (!cached && f.layout.StartOf(k) < f.remote_size) return "";
  }
  ContentMd5 md5;
  std::vector<char> buf(1 << 20);
  for (uint64_t at = 0; at < f.size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), f.size - at));
    ssize_t n = pread(f.fd, buf.data(), want, static_cast<off_t>(at));
    if (n < 0) return "";
    if (n == 0) {  // past the data file's end: holes, zeros
      std::fill(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(want), 0);
      n = static_cast<ssize_t>(want);
    }
    md5.Update(buf.data(), static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  return md5.Finish();
}

}  // namespace stampfs
