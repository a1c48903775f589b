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
//
// Pipeline commits (GroupTicket) do wait for company they know is coming:
// a ticket holder arriving while other tickets of its directory are still
// uploading their blobs waits for them (at most kGroupLingerMs, or until
// the transaction is full), so files committed together share one
// transaction instead of one each.
#include <chrono>
#include <set>

#include "fs/namespace/namespace.h"
#include "storage/stats.h"
#include "storage/table_batch.h"

namespace stampfs {

namespace {

Counter g_grouped_ops{"table_grouped_operations"};
Counter g_group_batches{"table_grouped_batches"};

thread_local Namespace::GroupTicket* t_ticket = nullptr;

}  // namespace

Namespace::GroupTicket::GroupTicket(Namespace& ns, std::string dir_path,
                                    std::function<void()> on_arrive)
    : ns_(ns), dir_path_(std::move(dir_path)), on_arrive_(std::move(on_arrive)) {
  std::lock_guard<std::mutex> lock(ns_.groups_mu_);
  ns_.uploading_[dir_path_]++;
  if (!t_ticket) t_ticket = this;
}

Namespace::GroupTicket::~GroupTicket() {
  if (t_ticket == this) t_ticket = nullptr;
  std::lock_guard<std::mutex> lock(ns_.groups_mu_);
  ArriveLocked();
}

// REQUIRES: ns_.groups_mu_
void Namespace::GroupTicket::ArriveLocked() {
  if (arrived_) return;
  arrived_ = true;
  if (on_arrive_) on_arrive_();
  auto it = ns_.uploading_.find(dir_path_);
  if (it != ns_.uploading_.end() && --it->second <= 0) ns_.uploading_.erase(it);
  ns_.groups_cv_.notify_all();
}

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
    std::unique_lock<std::mutex> lock(groups_mu_);
    groups_[dir_path].push_back(mine);
    if (t_ticket && !t_ticket->arrived_ && t_ticket->dir_path_ == dir_path) {
      t_ticket->ArriveLocked();
      groups_cv_.wait_for(lock, std::chrono::milliseconds(kGroupLingerMs), [&] {
        if (mine->done || !uploading_.count(dir_path)) return true;
        auto q = groups_.find(dir_path);
        return q != groups_.end() && q->second.size() + 1 >= kMaxBatchOperations;
      });
    }
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
    groups_cv_.notify_all();  // lingering callers answered below
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
