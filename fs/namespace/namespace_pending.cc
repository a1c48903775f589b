// Namespace: deferred creates. A file created without O_EXCL exists only in
// this mount (inode, attributes, name) until its first commit inserts the
// entry together with the blob's ETag: one entity transaction per new file
// instead of an insert at create and a merge at commit.
//
// Invariants (pending_mu_): a pending entry is not in the table (until its
// in-flight insert returns) nor in the metadata cache; lookups, getattr and
// readdir of this mount overlay it;
// setattr/xattr change it in memory; unlink drops it; every other change
// that could move or shadow it (rename, mkdir/symlink/create of its name,
// rmdir of its directory) first inserts it or sees it (Materialize, InsertEntry,
// CheckEmpty). Another mount sees the file after its first commit, as it
// sees data after close (docs/semantics.md). Lock order: rename_mu_, then
// pending_mu_, then a directory stripe; inserts run outside pending_mu_.
#include <algorithm>

#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "storage/table_keys.h"

namespace stampfs {

void Namespace::AddPendingLocked(uint64_t ino, Pending p) {
  pending_names_[{p.entry.partition_key, p.entry.row_key}] = ino;
  pending_[ino] = std::move(p);
}

void Namespace::ErasePendingLocked(std::map<uint64_t, Pending>::iterator it) {
  auto name = pending_names_.find({it->second.entry.partition_key, it->second.entry.row_key});
  if (name != pending_names_.end() && name->second == it->first) pending_names_.erase(name);
  pending_.erase(it);
}

uint64_t Namespace::PendingInoLocked(const std::string& pk, const std::string& rk) const {
  auto it = pending_names_.find({pk, rk});
  return it == pending_names_.end() ? 0 : it->second;
}

template <typename Fn>
void Namespace::ForEachPendingLocked(const std::string& pk, Fn fn) const {
  for (auto it = pending_names_.lower_bound({pk, std::string()});
       it != pending_names_.end() && it->first.first == pk; ++it) {
    fn(pending_.at(it->second));
  }
}

bool Namespace::IsPending(uint64_t ino) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  return pending_.count(ino) > 0;
}

std::optional<Attr> Namespace::PendingAttr(uint64_t ino) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  auto it = pending_.find(ino);
  if (it == pending_.end()) return std::nullopt;
  auto attr = AttrFromEntity(it->second.entry);
  if (!attr.ok()) return std::nullopt;
  return *attr;
}

std::optional<Entity> Namespace::PendingEntry(const std::string& pk, const std::string& rk) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  const uint64_t ino = PendingInoLocked(pk, rk);
  if (ino == 0) return std::nullopt;
  return pending_.at(ino).entry;
}

std::vector<Entity> Namespace::PendingIn(const std::string& pk) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  std::vector<Entity> out;
  ForEachPendingLocked(pk, [&](const Pending& p) { out.push_back(p.entry); });
  return out;
}

bool Namespace::AnyPendingIn(const std::string& pk) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  auto it = pending_names_.lower_bound({pk, std::string()});
  return it != pending_names_.end() && it->first.first == pk;
}

int64_t Namespace::PendingCreatedIn(const std::string& pk) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  int64_t latest = 0;
  ForEachPendingLocked(pk, [&](const Pending& p) {
    latest = std::max(latest, p.entry.GetInt64(kCreatedProperty));
  });
  return latest;
}

Result<Attr> Namespace::CreateDeferred(uint64_t parent, const Located& loc, const Attr& attr) {
  // A rename running in this mount may be moving the directory: its pending
  // entries were inserted when it began, so a create now goes to the table.
  std::unique_lock<std::mutex> renaming(rename_mu_, std::try_to_lock);
  if (!renaming.owns_lock())
    return InsertEntry(parent, loc, NewEntry(loc.parent_path, loc.name, attr));
  Entity entry = NewEntry(loc.parent_path, loc.name, attr);
  // When the name was created: the directory's time (its ctime moves with
  // chmod and utimens before the first commit; this does not).
  entry.properties[kCreatedProperty] = attr.ctime_ns;
  // The kernel asked only after a negative lookup; a name this mount knows
  // (cached or pending) is taken. The table decides at the first commit.
  if (PendingEntry(entry.partition_key, entry.row_key)) {
    return Status(Code::kAlreadyExists, loc.path);
  }
  if (cache_ && cache_->GetEntry(entry.partition_key, entry.row_key)) {
    auto known = FetchEntry(loc.parent_path, loc.name, false);
    if (known.ok()) return Status(Code::kAlreadyExists, loc.path);
    if (!known.status().Is(Code::kNotFound)) return known.status();
  }
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    AddPendingLocked(attr.ino, {entry, loc.parent_path, false});
  }
  inodes_.Remember(attr.ino, parent, loc.name, false);
  return attr;
}

// Inserts a pending entry; on success it is no longer pending. The request
// runs without pending_mu_ (lookups go on); the entry is marked in flight,
// and changes, drops and other inserts of it wait for the outcome. A 409 on
// our own row (an earlier insert whose answer was lost) counts as inserted;
// kAlreadyExists means the row was read and is another file's.
// A failure leaves the entry pending: the file's commit decides (a name
// taken or a directory removed: conflict copy or ENOENT, AbandonPending).
// REQUIRES: `lock` holds pending_mu_.
Result<Entity> Namespace::InsertPending(uint64_t ino, std::unique_lock<std::mutex>& lock) {
  WaitNotInFlight(ino, lock);
  auto it = pending_.find(ino);
  if (it == pending_.end()) return Status(Code::kNotFound, "inode is not pending");
  it->second.in_flight = true;
  Entity entry = it->second.entry;
  const std::string dir_path = it->second.dir_path;
  entry.etag.clear();
  lock.unlock();
  BatchError err;
  Result<Entity> out = Status(Code::kInternal, "insert not run");
  auto r = CommitGrouped(dir_path, TableOperation::Insert(entry), &err);
  if (r.ok()) {
    entry.etag = r->etags[0];
    out = entry;
  } else if (r.status().Is(Code::kAlreadyExists)) {
    table_requests++;
    auto there = table_.Get(options_.table, entry.partition_key, entry.row_key);
    const bool ours = there.ok() && there->GetInt64("ino") == static_cast<int64_t>(ino);
    // The name counts as another's only when read as such (the caller then
    // withdraws the blob): an unreadable or vanished row is a failure to retry.
    if (ours) {
      out = there;
    } else if (there.ok()) {
      out = r.status();
    } else if (there.status().Is(Code::kNotFound)) {
      out = Status(Code::kInternal, entry.row_key + ": insert answered 409, then the row was gone");
    } else {
      out = there.status().WithContext("reading the row an insert found taken");
    }
  } else {
    out = r.status();
  }
  lock.lock();
  it = pending_.find(ino);
  if (it != pending_.end()) {
    it->second.in_flight = false;
    if (out.ok()) ErasePendingLocked(it);
  }
  pending_cv_.notify_all();
  return out;
}

// REQUIRES: `lock` holds pending_mu_.
void Namespace::WaitNotInFlight(uint64_t ino, std::unique_lock<std::mutex>& lock) {
  pending_cv_.wait(lock, [&] {
    auto it = pending_.find(ino);
    return it == pending_.end() || !it->second.in_flight;
  });
}

// Applies `change` to a pending entry in memory; nullopt when `ino` is not
// pending. With `insert`, the changed entry is inserted at once.
std::optional<Result<Entity>> Namespace::ChangePending(uint64_t ino,
                                                       const std::function<Status(Entity*)>& change,
                                                       bool insert, const std::string& sent_to) {
  std::unique_lock<std::mutex> lock(pending_mu_);
  WaitNotInFlight(ino, lock);
  auto it = pending_.find(ino);
  if (it == pending_.end()) return std::nullopt;
  if (!sent_to.empty()) {
    // Renamed (in memory) while the data was sent: that blob is no entry's.
    const Entity& e = it->second.entry;
    auto name = NameOfEntry(e);
    const std::string at =
        name.ok() ? EntryBlobName(e, JoinPath(it->second.dir_path, *name)) : std::string();
    if (at != sent_to) {
      return Result<Entity>(
          Status(Code::kStale, "renamed to " + at + " while its data was sent to " + sent_to));
    }
  }
  Entity changed = it->second.entry;
  Status s = change(&changed);
  if (!s.ok()) return Result<Entity>(s);
  it->second.entry = changed;
  if (!insert) return Result<Entity>(changed);
  return InsertPending(ino, lock);
}

// Unlink of a pending entry: it never reached the table, and no blob of it
// is ours to delete (a blob at that name is another mount's).
std::optional<FileState> Namespace::DropPending(const std::string& pk, const std::string& rk,
                                                const std::string& path) {
  std::unique_lock<std::mutex> lock(pending_mu_);
  const uint64_t ino = PendingInoLocked(pk, rk);
  if (ino == 0) return std::nullopt;
  WaitNotInFlight(ino, lock);
  auto it = pending_.find(ino);
  if (it == pending_.end()) return std::nullopt;  // inserted meanwhile
  auto state = FileStateOf(it->second.entry, path);
  Removed(ino, &it->second.entry);
  ErasePendingLocked(it);
  if (!state.ok()) return std::nullopt;
  state->blob.clear();
  return *state;
}

void Namespace::AbandonPending(uint64_t ino) {
  std::unique_lock<std::mutex> lock(pending_mu_);
  WaitNotInFlight(ino, lock);
  auto it = pending_.find(ino);
  if (it == pending_.end()) return;
  Removed(ino, &it->second.entry);
  ErasePendingLocked(it);
}

// Inserts every pending entry (before a rename, which may move them or
// their directory). A name lost meanwhile is left to the file's commit.
// REQUIRES: rename_mu_ (no deferred create starts meanwhile).
Status Namespace::MaterializePending() {
  std::unique_lock<std::mutex> lock(pending_mu_);
  std::vector<uint64_t> inos;
  for (const auto& [ino, p] : pending_) inos.push_back(ino);
  for (uint64_t ino : inos) {
    auto r = InsertPending(ino, lock);
    if (!r.ok() && !r.status().Is(Code::kAlreadyExists) && !r.status().Is(Code::kNotFound)) {
      return r.status();
    }
  }
  return Status::Ok();
}

// A rename of this mount's pending file (created, not committed yet) to a
// name the table does not hold moves the pending entry in memory: nothing is
// sent, and the first commit inserts the file under its final name (a
// temporary file renamed into place, as rsync and editors do, is uploaded
// once). nullopt: not such a rename; the table path takes it.
// REQUIRES: rename_mu_ held (no deferred create starts meanwhile).
std::optional<Status> Namespace::RenamePending(const Located& from, uint64_t new_parent,
                                               const Located& to, uint64_t* moved) {
  const std::string pk = PartitionKeyForDirectory(from.parent_path);
  const std::string rk = RowKeyForName(from.name);
  auto find = [&]() -> uint64_t {
    const uint64_t ino = PendingInoLocked(pk, rk);
    return ino != 0 && !pending_.at(ino).in_flight ? ino : 0;
  };
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    if (find() == 0) return std::nullopt;
  }
  if (PendingEntry(PartitionKeyForDirectory(to.parent_path), RowKeyForName(to.name))) {
    return std::nullopt;  // over another pending file: the table path inserts both first
  }
  auto there = FetchEntry(to.parent_path, to.name, false, false);
  if (there.ok()) return std::nullopt;  // a rename over an entry of the table
  if (!there.status().Is(Code::kNotFound)) return there.status();
  std::lock_guard<std::mutex> lock(pending_mu_);
  const uint64_t ino = find();
  if (ino == 0) return std::nullopt;  // inserted meanwhile (its commit ran)
  auto node = pending_.find(ino);
  Pending p = node->second;
  ErasePendingLocked(node);
  p.entry.partition_key = PartitionKeyForDirectory(to.parent_path);
  p.entry.row_key = RowKeyForName(to.name);
  SetEntryName(to.name, &p.entry);
  p.entry.properties["ctime"] = NowNs();
  p.entry.properties["blob"] = BlobNameFor(to.path);
  p.dir_path = to.parent_path;
  AddPendingLocked(ino, std::move(p));
  inodes_.Move(ino, new_parent, to.name);
  if (moved) *moved = ino;
  return Status::Ok();
}

}  // namespace stampfs
