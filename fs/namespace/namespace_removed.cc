// Inodes whose last name this mount removed (unlink, a rename over them)
// while the kernel or an open file still holds them: POSIX keeps such a file
// usable through its descriptors until the last close.
#include "fs/namespace/namespace.h"

namespace stampfs {

Namespace::RemovalInFlight::RemovalInFlight(const Namespace& ns, uint64_t ino)
    : ns_(ns), ino_(ino) {
  std::lock_guard<std::mutex> lock(ns_.removing_mu_);
  ns_.removing_.insert(ino_);
}

Namespace::RemovalInFlight::~RemovalInFlight() {
  {
    std::lock_guard<std::mutex> lock(ns_.removing_mu_);
    ns_.removing_.erase(ns_.removing_.find(ino_));
  }
  ns_.removing_cv_.notify_all();
}

// The wait is bounded: a removal in flight is a few requests, each with a
// deadline.
bool Namespace::RemovedHere(uint64_t ino) const {
  {
    std::unique_lock<std::mutex> lock(removing_mu_);
    removing_cv_.wait(lock, [&] { return removing_.count(ino) == 0; });
  }
  return inodes_.IsDetached(ino);
}

void Namespace::Removed(uint64_t ino, const Entity* entry) {
  inodes_.Detach(ino);
  if (entry == nullptr) return;
  std::lock_guard<std::mutex> lock(removed_mu_);  // so a Forget now drops it after
  if (inodes_.Contains(ino)) removed_[ino] = *entry;
}

void Namespace::DropRemovedIfGone(uint64_t ino) {
  std::lock_guard<std::mutex> lock(removed_mu_);
  if (!inodes_.Contains(ino)) removed_.erase(ino);
}

void Namespace::Unpin(uint64_t ino) {
  inodes_.Unpin(ino);
  DropRemovedIfGone(ino);
}

std::optional<Entity> Namespace::RemovedEntry(uint64_t ino) {
  std::lock_guard<std::mutex> lock(removed_mu_);
  auto it = removed_.find(ino);
  if (it == removed_.end()) return std::nullopt;
  return it->second;
}

std::optional<Attr> Namespace::RemovedAttr(uint64_t ino) {
  auto entry = RemovedEntry(ino);
  if (!entry) return std::nullopt;
  auto attr = AttrFromEntity(*entry);
  if (!attr.ok()) return std::nullopt;
  attr->removed = true;
  return *attr;
}

// Changes of a removed inode (chmod, chown, utimens, a size the data path
// sets, xattrs) change what its descriptors show; nothing is sent (the name
// and entry are gone). A failed change leaves the entry as it was.
std::optional<Status> Namespace::ChangeRemoved(uint64_t ino,
                                               const std::function<Status(Entity*)>& change) {
  std::lock_guard<std::mutex> lock(removed_mu_);
  auto it = removed_.find(ino);
  if (it == removed_.end()) return std::nullopt;
  Entity changed = it->second;
  Status s = change(&changed);
  if (s.ok()) it->second = std::move(changed);
  return s;
}

std::optional<Result<Attr>> Namespace::SetRemovedAttr(uint64_t ino, const SetAttrRequest& req) {
  auto s = ChangeRemoved(ino, [&](Entity* e) { return ApplySetAttr(req, e); });
  if (!s) return std::nullopt;
  if (!s->ok()) return Result<Attr>(*s);
  auto attr = RemovedAttr(ino);
  if (!attr) return Result<Attr>(Status(Code::kNotFound, "inode " + std::to_string(ino)));
  return *attr;
}

Result<Entity> Namespace::XattrEntity(uint64_t ino) {
  if (auto removed = RemovedEntry(ino)) return *removed;
  return FetchEntryOf(ino, nullptr, false);
}

}  // namespace stampfs
