// Namespace: entry changes of one directory sharing entity group transactions.
//
// Protocol (group commit): a caller queues its operation on the directory,
// then takes the directory's stripe. Whoever holds the stripe sends every
// queued operation of that directory (up to 99 plus the "." merge, distinct
// RowKeys, within the payload limit) as one transaction, so callers that
// arrive while a transaction is on the wire share the next one; nobody waits
// for company. A transaction refused because of one operation answers that
// operation's caller; the others go again without it. An outcome not tied
// to one operation (the directory removed, a timeout) answers every caller
// in the transaction. Each result is exactly what CommitInDirectory would
// have returned for the operation alone.
#include <set>

#include "fs/namespace.h"
#include "storage/stats.h"
#include "storage/table_batch.h"

namespace stampfs {

namespace {

Counter g_grouped_ops{"table_grouped_operations"};
Counter g_group_batches{"table_grouped_batches"};

}  // namespace

struct Namespace::GroupSlot {
  TableOperation op;
  bool done = false;
  Result<BatchResult> result = Status(Code::kInternal, "not sent");
  BatchError error;
};

Result<BatchResult> Namespace::CommitGrouped(const std::string& dir_path, const TableOperation& op,
                                             BatchError* error) {
  auto mine = std::make_shared<GroupSlot>();
  mine->op = op;
  {
    std::lock_guard<std::mutex> lock(groups_mu_);
    groups_[dir_path].push_back(mine);
  }
  std::lock_guard<std::mutex> stripe(StripeFor(dir_path));
  for (;;) {
    std::vector<std::shared_ptr<GroupSlot>> batch;
    {
      std::lock_guard<std::mutex> lock(groups_mu_);
      if (mine->done) break;
      auto& queue = groups_[dir_path];
      std::set<std::string> keys;
      size_t bytes = kBatchEnvelopeBytes;
      for (auto it = queue.begin(); it != queue.end() && batch.size() + 1 < kMaxBatchOperations;) {
        const size_t size = EstimateOperationBytes((*it)->op);
        const bool fits = bytes + size < kMaxBatchBytes / 2;
        if (!keys.insert((*it)->op.entity.row_key).second || (!fits && !batch.empty())) {
          ++it;  // the next transaction takes it
          continue;
        }
        bytes += size;
        batch.push_back(*it);
        it = queue.erase(it);
      }
      if (queue.empty()) groups_.erase(dir_path);
    }
    std::vector<TableOperation> ops;
    ops.reserve(batch.size());
    for (const auto& slot : batch) ops.push_back(slot->op);
    if (batch.size() > 1) g_group_batches.Add();
    g_grouped_ops.Add(batch.size());
    BatchError err;
    auto r = CommitInDirectoryLocked(dir_path, ops, &err);
    std::lock_guard<std::mutex> lock(groups_mu_);
    const bool one_failed =
        !r.ok() && err.failed_index >= 0 && static_cast<size_t>(err.failed_index) < batch.size();
    if (one_failed && batch.size() > 1) {
      // That operation's answer; the others go again, first in line.
      auto& failed = *batch[err.failed_index];
      failed.result = r.status();
      failed.error = {err.status, 0};
      failed.done = true;
      batch.erase(batch.begin() + err.failed_index);
      auto& queue = groups_[dir_path];
      queue.insert(queue.begin(), batch.begin(), batch.end());
      continue;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      GroupSlot& slot = *batch[i];
      slot.done = true;
      if (r.ok()) {
        BatchResult one;
        one.etags = {r->etags[i]};
        slot.result = one;
        continue;
      }
      slot.result = r.status();
      // Indexes past the entry operations name the "." merge: 1 for one.
      slot.error = {err.status, one_failed ? 0 : err.failed_index < 0 ? -1 : 1};
    }
  }
  if (error) *error = mine->error;
  return mine->result;
}

}  // namespace stampfs
