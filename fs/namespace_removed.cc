// Inodes whose last name this mount removed (unlink, a rename over them)
// while the kernel or an open file still holds them: POSIX keeps such a file
// usable through its descriptors until the last close.
#include "fs/namespace.h"

namespace stampfs {

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

std::optional<Attr> Namespace::RemovedAttr(uint64_t ino) {
  std::lock_guard<std::mutex> lock(removed_mu_);
  auto it = removed_.find(ino);
  if (it == removed_.end()) return std::nullopt;
  auto attr = AttrFromEntity(it->second);
  if (!attr.ok()) return std::nullopt;
  attr->removed = true;
  return *attr;
}

// chmod, chown, utimens (and a size the data path sets) of a removed inode
// change what fstat shows; nothing is sent (the name and entry are gone).
std::optional<Result<Attr>> Namespace::SetRemovedAttr(uint64_t ino, const SetAttrRequest& req) {
  std::lock_guard<std::mutex> lock(removed_mu_);
  auto it = removed_.find(ino);
  if (it == removed_.end()) return std::nullopt;
  Status s = ApplySetAttr(req, &it->second);
  if (!s.ok()) return Result<Attr>(s);
  auto attr = AttrFromEntity(it->second);
  if (attr.ok()) attr->removed = true;
  return attr;
}

}  // namespace stampfs
