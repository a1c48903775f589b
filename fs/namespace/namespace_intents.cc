// Roll-forward of unfinished renames (fs/namespace/rename_intent.h): at mount start
// (Namespace::Init), by fsck --repair, and before this mount's next rename.
// Also the claim of a rename's source.
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

bool ProcessAlive(int64_t pid) {
  if (pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

// A live mount may still be running its own rename: leave it alone unless
// it is this instance, or its process on this host is gone (or is this
// process: an earlier Namespace of it), or the grace period has passed.
bool Namespace::MayTakeOver(const RenameIntent& intent) const {
  if (intent.mount == mount_id_) return true;
  if (intent.host == host_ && (intent.pid == getpid() || !ProcessAlive(intent.pid))) return true;
  return NowNs() - intent.created_ns > options_.intent_grace_ms * 1000000;
}

Result<std::vector<IntentOutcome>> Namespace::RollForwardIntents(bool all) {
  table_requests++;
  auto rows = table_.QueryPartition(options_.table, kIntentsPartition);
  STAMPFS_RETURN_IF_ERROR(rows);
  std::vector<IntentOutcome> out;
  std::lock_guard<std::mutex> lock(rename_mu_);
  std::unique_lock<std::shared_mutex> no_blob_attrs(blob_attrs_mu_);
  for (const Entity& row : *rows) {
    IntentOutcome o;
    auto intent = IntentFromEntity(row);
    if (!intent.ok()) {
      o.intent.id = row.row_key;
      o.status = intent.status();
      out.push_back(std::move(o));
      continue;
    }
    o.intent = *intent;
    if (!all && !MayTakeOver(*intent)) {
      o.skipped = true;
      out.push_back(std::move(o));
      continue;
    }
    std::vector<std::string> orphaned;
    bool settled = false;
    o.status = FinishRename(*intent, &orphaned, &settled);
    o.settled = settled;
    // Nothing is open yet: a replaced target's stale blob can go now.
    for (const std::string& blob : orphaned) {
      blobs_.Delete(options_.container, blob, Condition::None()).PermitUnchecked();
    }
    if (o.status.ok()) {
      LogInfo("rolled forward the unfinished " + intent->Describe());
    } else {
      LogWarning("unfinished " + intent->Describe() + ": " + o.status.ToString());
    }
    out.push_back(std::move(o));
  }
  return out;
}

// Stamps `intent` (id, time, who) and inserts its row.
Status Namespace::WriteIntent(RenameIntent* intent) {
  intent->created_ns = NowNs();
  intent->id = NewIntentId(intent->created_ns);
  intent->host = host_;
  intent->pid = getpid();
  intent->mount = mount_id_;
  table_requests++;
  return StatusOf(table_.Insert(options_.table, IntentToEntity(*intent)));
}

Status Namespace::FinishPendingRenames() {
  while (!pending_renames_.empty()) {
    std::vector<std::string> orphaned;
    bool settled = false;
    Status s = FinishRename(pending_renames_.front(), &orphaned, &settled);
    for (const std::string& blob : orphaned) {
      blobs_.Delete(options_.container, blob, Condition::None()).PermitUnchecked();
    }
    if (!settled)
      return s.WithContext("finishing an earlier " + pending_renames_.front().Describe());
    RepointFinished(pending_renames_.front());
    pending_renames_.erase(pending_renames_.begin());
  }
  unfinished_renames_ = false;
  return Status::Ok();
}

void Namespace::LeaveUnfinished(const RenameIntent& intent) {
  pending_renames_.push_back(intent);
  unfinished_renames_ = true;
}

void Namespace::SettleOwnRenames() {
  if (!unfinished_renames_) return;
  std::unique_lock<std::mutex> renaming(rename_mu_, std::try_to_lock);
  if (!renaming.owns_lock()) return;         // a rename runs: it finishes them first
  FinishPendingRenames().PermitUnchecked();  // no answer: tried again at the next
}

void Namespace::RepointFinished(const RenameIntent& done) {
  if (done.exchange || done.Across()) return;  // exchanges keep their inodes' names
  const std::string to_dir = ParentPath(done.to);
  auto e = FetchEntry(to_dir, BaseName(done.to), true, false);
  if (!e.ok() || static_cast<uint64_t>(e->GetInt64("ino")) != done.ino) return;  // not moved
  auto dot = FetchDot(PartitionKeyForDirectory(to_dir));
  if (!dot.ok()) return;
  if (done.is_dir && cache_) {
    cache_->DropPartition(PartitionKeyForDirectory(done.from)).PermitUnchecked();
  }
  inodes_.Move(done.ino, static_cast<uint64_t>(dot->GetInt64("ino")), BaseName(done.to));
}

// Marks `src` (the source entry, read fresh) with the intent's id, If-Match
// its ETag. A mark of another intent that still exists means another rename
// of this entry was decided first: kNotFound. A mark whose intent is gone is
// stale (a rename undone or dropped) and is taken over.
Status Namespace::ClaimForRename(const RenameIntent& intent, Entity* src) {
  const std::string* mark = src->GetString(kRenamingProperty);
  if (mark && *mark == intent.id) return Status::Ok();
  if (mark && !mark->empty()) {
    table_requests++;
    auto other = table_.Get(options_.table, kIntentsPartition, *mark);
    if (other.ok())
      return Status(Code::kNotFound, intent.from + " is being renamed by another mount");
    if (!other.status().Is(Code::kNotFound)) return other.status();
  }
  Entity claim = *src;
  claim.etag.clear();
  claim.properties[kRenamingProperty] = intent.id;
  BatchError err;
  auto r = CommitInDirectory(ParentPath(intent.from),
                             {TableOperation::Replace(claim, Condition::IfMatch(src->etag))}, &err);
  if (!r.ok() && err.failed_index == 0 &&
      (r.status().Is(Code::kPreconditionFailed) || r.status().Is(Code::kNotFound))) {
    return Status(Code::kNotFound, intent.from + " was changed or renamed by another mount");
  }
  STAMPFS_RETURN_IF_ERROR(r);
  src->properties[kRenamingProperty] = intent.id;
  src->etag = r->etags[0];
  return Status::Ok();
}

}  // namespace stampfs
