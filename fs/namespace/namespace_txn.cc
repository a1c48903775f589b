// Namespace: directory transactions (every change of a directory's entries
// is one $batch on its partition that also merges its "." row), the
// confirmation of a 404 before it is acted on, and inode numbers taken from
// ~fs/ino-counter in ranges.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "fs/namespace/namespace.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

// Appends the merge of the directory's "." row, so its ETag changes with the
// entries. With a complete cached listing the merge is If-Match:<cached ETag>,
// and success proves nobody else changed the directory: the cache is updated
// in place and stays complete. Otherwise it is If-Match:* and the listing is
// invalidated.
Result<BatchResult> Namespace::CommitInDirectory(const std::string& dir_path,
                                                 std::vector<TableOperation> ops,
                                                 BatchError* error,
                                                 std::optional<bool> names_change) {
  std::lock_guard<std::mutex> lock(StripeFor(dir_path));
  return CommitInDirectoryLocked(dir_path, std::move(ops), error, names_change);
}

namespace {

// The time a change of names stamps on the directory: now, or for inserts
// alone the newest of their entries' ctimes (a file created on this mount
// before its first commit inserted it shows the directory changed at its
// creation, and the commit does not move that time again: tar).
int64_t TouchedBy(const std::vector<TableOperation>& ops, int64_t now) {
  int64_t newest = 0;
  for (const TableOperation& op : ops) {
    if (op.kind == TableOperation::Kind::kDelete) return now;
    if (op.kind != TableOperation::Kind::kInsert) continue;
    const int64_t ctime = op.entity.GetInt64(kCreatedProperty);
    if (ctime <= 0 || ctime > now) return now;
    newest = std::max(newest, ctime);
  }
  return newest > 0 ? newest : now;
}

}  // namespace

// REQUIRES: the directory's stripe is held.
Result<BatchResult> Namespace::CommitInDirectoryLocked(const std::string& dir_path,
                                                       std::vector<TableOperation> ops,
                                                       BatchError* error,
                                                       std::optional<bool> names_change) {
  const std::string pk = PartitionKeyForDirectory(dir_path);
  std::optional<DirectoryGeneration> gen;
  if (cache_) gen = cache_->GetGeneration(pk);
  bool exact = gen && gen->complete;
  if (!names_change) {
    names_change = std::any_of(ops.begin(), ops.end(), [](const TableOperation& op) {
      return op.kind == TableOperation::Kind::kInsert || op.kind == TableOperation::Kind::kDelete;
    });
  }
  // Every transaction changes the "." ETag (revalidation); only a change of
  // names moves the directory's mtime (a child's chmod or data does not).
  const int64_t now = NowNs();
  Entity dot{pk, kDotRowKey, {{"changed", now}}, {}};
  if (*names_change) {
    int64_t touched = TouchedBy(ops, now);
    // Never back in time from what this mount last saw.
    if (auto cached = cache_ ? cache_->GetEntry(pk, kDotRowKey) : std::nullopt) {
      touched = std::max(touched, cached->entity.GetInt64("touched"));
    }
    dot.properties["touched"] = touched;
  }
  ops.push_back(TableOperation::Merge(dot, Condition::IfMatch(exact ? gen->dot_etag : "*")));
  const int dot_index = static_cast<int>(ops.size()) - 1;
  BatchError local;
  BatchError* err = error ? error : &local;
  int present_after_404 = 0;
  for (int attempt = 0;; ++attempt) {
    table_requests++;
    auto r = table_.ExecuteBatch(options_.table, ops, err);
    if (r.ok()) {
      if (cache_) {
        // With an exact listing every entry's old state is cached: the
        // subdirectory count follows the batch.
        int64_t subdirs_delta = 0;
        for (size_t i = 0; exact && i + 1 < ops.size(); ++i) {
          const Entity& e = ops[i].entity;
          auto old = cache_->GetEntry(e.partition_key, e.row_key);
          const bool was_dir = old && EntryType(old->entity) == S_IFDIR;
          bool is_dir = false;
          if (ops[i].kind != TableOperation::Kind::kDelete) {
            is_dir = e.Has("mode") ? EntryType(e) == S_IFDIR : was_dir;
          }
          subdirs_delta += static_cast<int64_t>(is_dir) - static_cast<int64_t>(was_dir);
        }
        for (size_t i = 0; i + 1 < ops.size(); ++i) {
          const Entity& e = ops[i].entity;
          if (ops[i].kind == TableOperation::Kind::kDelete) {
            cache_->EraseEntry(e.partition_key, e.row_key).PermitUnchecked();
          } else {
            Entity stored = e;
            stored.etag = r->etags[i];
            cache_->PutEntry(stored, NowMs()).PermitUnchecked();
          }
        }
        // The cached "." keeps its other properties (the root's attributes);
        // they are current only if the batch proved nobody changed "."
        // (exact), else not fresh.
        Entity cached_dot = dot;
        if (auto old = cache_->GetEntry(pk, kDotRowKey)) {
          cached_dot = old->entity;
          for (const auto& [k, v] : dot.properties) cached_dot.properties[k] = v;
        }
        if (exact && cached_dot.Has(kSubdirsProperty)) {
          cached_dot.properties[kSubdirsProperty] =
              cached_dot.GetInt64(kSubdirsProperty) + subdirs_delta;
        } else {
          cached_dot.properties.erase(kSubdirsProperty);
        }
        cached_dot.etag = r->etags.back();
        cache_->PutEntry(cached_dot, exact ? NowMs() : 0).PermitUnchecked();
        if (exact) {
          cache_->SetGeneration(pk, {r->etags.back(), true, NowMs()}).PermitUnchecked();
        } else {
          cache_->InvalidateListing(pk).PermitUnchecked();
        }
      }
      r->etags.pop_back();
      return r;
    }
    if (err->failed_index == dot_index && r.status().Is(Code::kPreconditionFailed) && exact &&
        attempt == 0) {
      // Another mount changed the directory: our listing is stale. The entry
      // operations carry their own conditions, so retry without the "." one.
      cache_->InvalidateListing(pk).PermitUnchecked();
      exact = false;
      ops.back().condition = Condition::IfMatch("*");
      continue;
    }
    if (r.status().Is(Code::kNotFound)) {
      Status confirmed = ConfirmNotFound(ops, err);
      // The row is there: gone and back between the batch and the read (a
      // directory another mount renamed away and back), or a service that
      // answers 404 for a row that exists. Once more; a second such 404 is
      // the service's error.
      if (confirmed.service_code() == kUnexpectedNotFound && ++present_after_404 < 2) continue;
      if (!confirmed.Is(Code::kNotFound)) return confirmed;
    }
    if (err->failed_index == dot_index && r.status().Is(Code::kNotFound)) {
      if (cache_) cache_->DropPartition(pk).PermitUnchecked();
      return Status(Code::kNotFound, "directory " + dir_path + " was removed");
    }
    // An entry exists that we thought absent, or changed or vanished under
    // us: another mount changed the directory, so the cached listing is
    // stale (a lookup right after a lost create race must see the winner).
    if (cache_ && (r.status().Is(Code::kAlreadyExists) ||
                   r.status().Is(Code::kPreconditionFailed) || r.status().Is(Code::kNotFound))) {
      cache_->InvalidateListing(pk).PermitUnchecked();
    }
    return r.status();
  }
}

Result<uint64_t> Namespace::AllocateIno() {
  std::lock_guard<std::mutex> lock(ino_mu_);
  if (next_ino_ >= ino_limit_) STAMPFS_RETURN_IF_ERROR(ReserveInoRangeLocked());
  return next_ino_++;
}

Status Namespace::ReserveInoRange() {
  std::lock_guard<std::mutex> lock(ino_mu_);
  return ReserveInoRangeLocked();
}

// Ranges grow (ino_range, then twice as many each time, up to 64Ki): a mount
// that creates many files takes the counter rarely; unused numbers of a
// range are lost at unmount, which 63 bits absorb.
Status Namespace::ReserveInoRangeLocked() {
  const uint64_t count = std::max(
      options_.ino_range,
      std::min<uint64_t>(options_.ino_range << std::min<uint64_t>(ino_ranges_, 16), 65536));
  for (int attempt = 0; attempt < 50; ++attempt) {
    table_requests++;
    auto counter = table_.Get(options_.table, kFsRowsPartition, kInoCounterRowKey);
    STAMPFS_RETURN_IF_ERROR(counter);
    int64_t next = counter->GetInt64("next");
    Entity updated{
        kFsRowsPartition, kInoCounterRowKey, {{"next", next + static_cast<int64_t>(count)}}, {}};
    table_requests++;
    auto r = table_.Update(options_.table, updated, UpdateMode::kReplace,
                           Condition::IfMatch(counter->etag));
    if (r.ok()) {
      next_ino_ = static_cast<uint64_t>(next);
      ino_limit_ = next_ino_ + count;
      ino_ranges_++;
      return Status::Ok();
    }
    if (!r.status().Is(Code::kPreconditionFailed)) return r.status();
    // Another mount took a range first; try again with its result.
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + attempt * 2));
  }
  return Status(Code::kInternal, "inode counter: too many concurrent allocations");
}

// A 404 from a transaction is acted on (ENOENT, a blob dropped, a conflict
// copy) only once a point read confirms the row is gone: a service answering
// 404 for a row that exists (Azurite's $batch did, for RowKeys starting with
// ',') must never make a mount delete data. Reads the failing operation's row
// (every row the batch expected when the service did not say which): the 404
// with err->failed_index naming the missing row when one is gone; a service
// error (EIO) when all are there; else the read's own failure.
Status Namespace::ConfirmNotFound(const std::vector<TableOperation>& ops, BatchError* err) {
  const Status why = err->status;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (err->failed_index >= 0 && static_cast<size_t>(err->failed_index) != i) continue;
    const TableOperation& op = ops[i];
    if (op.kind == TableOperation::Kind::kInsert || op.condition.kind != Condition::Kind::kIfMatch) {
      continue;  // only a row the operation requires can be missing
    }
    table_requests++;
    auto there = table_.Get(options_.table, op.entity.partition_key, op.entity.row_key);
    if (there.status().Is(Code::kNotFound)) {
      err->failed_index = static_cast<int>(i);
      return why;
    }
    if (!there.ok()) return there.status().WithContext("confirming a 404");
  }
  return Status(Code::kInternal,
                "the table answered 404 (" + why.message() + ") for rows that exist; nothing " +
                    "was changed",
                500, kUnexpectedNotFound);
}

}  // namespace stampfs
