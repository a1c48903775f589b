// Pins blocks [first, last] of one cache file for the life of a read, write
// or upload, so eviction cannot punch what is being used (cache/block_cache.h).
#pragma once

#include <cstdint>

#include "cache/block_cache.h"

namespace stampfs {

class PinRange {
 public:
  // An empty range when last < first.
  PinRange(BlockCache& cache, int64_t id, uint64_t first, uint64_t last)
      : cache_(cache), first_(first), last_(last) {
    Pin(id);
  }
  ~PinRange() { Unpin(); }
  PinRange(const PinRange&) = delete;
  PinRange& operator=(const PinRange&) = delete;

  // The open file moved to another cache file (a new version): pin that one.
  void Follow(int64_t id) {
    if (id == id_) return;
    Unpin();
    Pin(id);
  }

 private:
  void Pin(int64_t id) {
    id_ = id;
    for (uint64_t k = first_; k <= last_ && last_ >= first_; ++k) cache_.Pin(id_, k);
  }
  void Unpin() {
    for (uint64_t k = first_; k <= last_ && last_ >= first_; ++k) cache_.Unpin(id_, k);
  }
  BlockCache& cache_;
  int64_t id_ = 0;
  uint64_t first_, last_;
};

}  // namespace stampfs
