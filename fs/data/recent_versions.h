// What this mount last knew of recently closed files: the blob version (so
// an open of an unchanged version keeps the kernel's page cache) and, after
// its own commit, the size, mtime and ctime it merged into the entry (so an
// entry read before that merge finished is recognized as older). Bounded:
// beyond `capacity` files the least recently recorded are forgotten.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace stampfs {

class RecentVersions {
 public:
  struct Seen {
    std::string etag;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;  // of this mount's last entry merge; 0 = none
  };

  explicit RecentVersions(size_t capacity = 8192) : capacity_(capacity) {}

  std::optional<Seen> Get(uint64_t ino) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(ino);
    if (it == map_.end()) return std::nullopt;
    return it->second.seen;
  }

  void Put(uint64_t ino, Seen seen) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(ino);
    if (it != map_.end()) order_.erase(it->second.pos);
    order_.push_back(ino);
    map_[ino] = Node{std::move(seen), std::prev(order_.end())};
    while (map_.size() > capacity_) {
      map_.erase(order_.front());
      order_.pop_front();
    }
  }

 private:
  struct Node {
    Seen seen;
    std::list<uint64_t>::iterator pos;
  };
  const size_t capacity_;
  std::mutex mu_;                           // a leaf lock
  std::list<uint64_t> order_;               // GUARDED_BY(mu_), oldest first
  std::unordered_map<uint64_t, Node> map_;  // GUARDED_BY(mu_)
};

}  // namespace stampfs
