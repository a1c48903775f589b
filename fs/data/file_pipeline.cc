// FileData: the commit pipeline of -o commit=async.
//
// Protocol: the last close of a file with changes journals them durably
// (the cache file synced, then the journal row with synchronous=FULL) and
// queues the inode, due commit_delay_ms later; a close of a file already
// queued moves its due time (a file rewritten, renamed or removed before its
// commit costs nothing for the states in between). Pipeline threads take
// due files and run the same commit as a close in commit=close mode
// (CommitLocked: every precondition, ambiguous outcomes, conflicts); at
// most commit_threads of them upload at once (UploadSlot), the others wait
// for their directory's transaction. Files due within half a delay of a due one start with it, and
// the entry changes of commits running at once in one directory share
// entity group transactions (Namespace::CommitGrouped, GroupTicket). A commit that
// fails for a reason that may pass is retried with backoff; the changes stay
// journaled meanwhile, so a crash at any point leaves them to the next
// mount's replay. A file committed and not open is unloaded.
//
// Invariants: a queued file is loaded and dirty, or about to be dequeued by
// its commit; queue_mu_ is taken after a file's mu, never before.
#include <algorithm>

#include "fs/base/log.h"
#include "fs/data/file_data.h"
#include "storage/cancel.h"
#include "storage/stats.h"

namespace stampfs {

namespace {

Counter g_async_commits{"async_commits"};
Counter g_async_retries{"async_commit_retries"};

constexpr int64_t kMaxBackoffMs = 30000;

// One of the pipeline's upload slots, held from before a commit locks its
// file until its upload is done (or the commit ends); none without slots.
class UploadSlot {
 public:
  using Slots = std::counting_semaphore<FileData::kMaxUploadSlots>;
  explicit UploadSlot(Slots* slots) : slots_(slots) {
    if (slots_) slots_->acquire();
  }
  ~UploadSlot() { Release(); }
  UploadSlot(const UploadSlot&) = delete;
  UploadSlot& operator=(const UploadSlot&) = delete;
  void Release() {
    if (slots_) slots_->release();
    slots_ = nullptr;
  }

 private:
  Slots* slots_;
};

}  // namespace

void FileData::Enqueue(uint64_t ino, int64_t delay_ms) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    const int64_t now = NowMs();
    auto [it, fresh] = queued_.try_emplace(ino);
    if (fresh) it->second.since_ms = now;
    if (it->second.failures == 0) it->second.due_ms = now + delay_ms;
  }
  queue_cv_.notify_all();
}

void FileData::Dequeue(uint64_t ino) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queued_.erase(ino);
  }
  queue_cv_.notify_all();
}

Status FileData::WaitForRoom() {
  if (!async() || options_.commit_threads == 0) return Status::Ok();  // (tests pump by hand)
  std::unique_lock<std::mutex> lock(queue_mu_);
  if (queued_.size() < options_.max_queued) return Status::Ok();
  LogInfo("commit queue full (" + std::to_string(queued_.size()) + " files): writers wait");
  while (!stopping_ && queued_.size() >= options_.max_queued) {
    if (CurrentlyCancelled()) return Cancelled("waiting for room in the commit queue");
    queue_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return Status::Ok();
}

void FileData::RunScheduler() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (!stopping_) {
    const int64_t now = NowMs();
    int64_t next = now + 1000;
    // Files due within half a delay of one that is due go with it, so that
    // files closed close together are committed together (their entries
    // share transactions); a file in backoff waits its whole time.
    const bool any_due = std::any_of(queued_.begin(), queued_.end(), [&](const auto& kv) {
      return !kv.second.running && kv.second.due_ms <= now;
    });
    const int64_t window = any_due ? options_.commit_delay_ms / 2 : 0;
    for (auto& [ino, q] : queued_) {
      if (q.running) continue;
      if (q.due_ms > now + (q.failures == 0 ? window : 0)) {
        next = std::min(next, q.due_ms);
        continue;
      }
      q.running = true;
      commits_->Submit([this, ino = ino] { CommitQueued(ino); });
    }
    if (UnansweredDue()) commits_->Submit([this] { SweepUnanswered(); });
    queue_cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, next - now)));
  }
}

size_t FileData::CommitDue() {
  SweepUnanswered();
  std::vector<uint64_t> due;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    const int64_t now = NowMs();
    for (auto& [ino, q] : queued_) {
      if (q.running || q.due_ms > now) continue;
      q.running = true;
      due.push_back(ino);
    }
  }
  for (uint64_t ino : due) CommitQueued(ino);
  return due.size();
}

void FileData::CommitQueued(uint64_t ino) {
  if (ns_.HasDeferred(ino)) return CommitDeferredQueued(ino);
  // An upload slot before the file's lock (a writer of the file never waits
  // for other files' uploads); given back when the ticket arrives.
  UploadSlot slot(upload_slots_.get());
  FilePtr fp = Find(ino);
  if (!fp) return Dequeue(ino);
  Lock lock(fp->mu);
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    if (stopping_) {
      // Shutdown commits what is left (CommitAll); the journal keeps it.
      auto it = queued_.find(ino);
      if (it != queued_.end()) it->second.running = false;
      return;
    }
  }
  if (!fp->loaded) {
    lock.unlock();
    return Dequeue(ino);
  }
  // The commit holds the file like an open: an unlink or a rename over it
  // meanwhile defers its cleanup to the end (DeleteBlobWhenUnused), instead
  // of unloading the file under the commit.
  fp->refs++;
  Status s;
  {
    Namespace::GroupTicket ticket(ns_, ParentPath(fp->path), [&slot] { slot.Release(); });
    s = CommitLocked(fp, lock);
  }
  fp->refs--;
  if (s.ok() && fp->loaded && fp->dirty) {
    // Written again and closed while the commit ran: queued again already.
    std::lock_guard<std::mutex> q(queue_mu_);
    auto it = queued_.find(ino);
    if (it != queued_.end()) {
      it->second.running = false;
      it->second.due_ms = std::max(it->second.due_ms, NowMs() + options_.commit_delay_ms);
    }
    return;
  }
  // Changes still not in the container (at the name or in a copy) stay
  // queued and are retried, whatever the failure: only conflict=fail, once a
  // conflict is proven, leaves them to the journal alone (logged).
  const bool kept_by_policy =
      s.Is(Code::kPreconditionFailed) && options_.conflict == ConflictPolicy::kFail;
  if (fp->loaded && fp->dirty && !kept_by_policy) {
    std::lock_guard<std::mutex> q(queue_mu_);
    auto it = queued_.find(ino);
    if (it != queued_.end()) RetryLater(it->second, fp->path, s);
    return;
  }
  if (s.ok()) g_async_commits.Add();
  if (fp->loaded && fp->dirty) LogWarning(fp->path + ": " + s.ToString());
  Dequeue(ino);
  if (fp->refs == 0) Closed(fp, lock);
}

// A directory's deferred attribute change: committed and dequeued, queued
// again when it changed meanwhile, or retried with backoff.
void FileData::CommitDeferredQueued(uint64_t ino) {
  Status s = ns_.CommitDeferred(ino);
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    auto it = queued_.find(ino);
    if (it == queued_.end()) return;
    Queued& e = it->second;
    e.running = false;
    if (s.ok() && !ns_.HasDeferred(ino)) {
      g_async_commits.Add();
      queued_.erase(it);
    } else if (s.ok()) {
      e.due_ms = std::max(e.due_ms, NowMs() + options_.commit_delay_ms);
    } else {
      RetryLater(e, "directory inode " + std::to_string(ino), s);
    }
  }
  queue_cv_.notify_all();
}

// REQUIRES: queue_mu_. A commit failed for a reason that may pass.
void FileData::RetryLater(Queued& e, const std::string& what, const Status& s) {
  g_async_retries.Add();
  e.running = false;
  e.failures++;
  const int64_t backoff = std::min<int64_t>(kMaxBackoffMs, 500ll << std::min(e.failures, 6));
  e.due_ms = NowMs() + backoff;
  if (e.failures == 1 || e.failures % 10 == 0) {
    LogWarning(what + ": commit failed (" + s.ToString() + "); retried in " +
               std::to_string(backoff) + " ms, the changes stay in the cache journal");
  }
}

bool FileData::Pending(uint64_t ino) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queued_.count(ino)) return true;
  }
  FilePtr f = Find(ino);
  if (!f) return false;
  std::lock_guard<std::mutex> lock(f->mu);
  return f->loaded && f->dirty;
}

// commit=async: a rename moves committed rows and blobs, so what is queued
// under the source is committed first: a directory's whole queue, or the
// file's own changes (a file not committed yet is renamed in memory when
// its new name is free; over another entry it is committed first). A
// file the rename would replace: its queued changes are committed too (the
// rename decides whether they are replaced), and while it is open its data
// is made local before the copy overwrites its blob. An exchange removes
// nothing, but both files move under their blobs (fs/namespace/namespace_exchange.cc):
// both are committed first, new ones too, since a pipeline commit racing
// the exchange's roll-forward wrote to a blob name the other file's data
// was being moved to (a conflict copy).
uint64_t FileData::BeforeRename(uint64_t parent, const std::string& name, uint64_t new_parent,
                                const std::string& new_name, bool exchange) {
  auto src = ns_.Peek(parent, name);
  if (!src.ok()) return 0;  // the rename reports it
  auto dst = ns_.Peek(new_parent, new_name);
  // A new file moves in memory only to a free name; over an entry the
  // rename inserts it and moves its row, which its own commit must not race.
  const bool in_memory = !exchange && !dst.ok();
  const auto settle = [&](uint64_t ino) {
    if (async() && !(in_memory && ns_.IsPending(ino)) && Pending(ino)) Sync(ino).PermitUnchecked();
  };
  if (async() && src->IsDir()) {
    SyncAll().PermitUnchecked();
  } else if (src->IsRegular()) {
    settle(src->ino);
  }
  if (!dst.ok() || !dst->IsRegular() || dst->ino == src->ino) return 0;
  settle(dst->ino);
  if (exchange) return 0;
  {
    std::lock_guard<std::mutex> lock(replace_mu_);
    replacing_.insert(dst->ino);
  }
  BeforeRemoval(dst->ino);
  return dst->ino;
}

void FileData::RenameDone(uint64_t replaced) {
  if (replaced == 0) return;
  std::lock_guard<std::mutex> lock(replace_mu_);
  if (auto it = replacing_.find(replaced); it != replacing_.end()) replacing_.erase(it);
}

bool FileData::Replacing(uint64_t ino) {
  std::lock_guard<std::mutex> lock(replace_mu_);
  return replacing_.contains(ino);
}

PipelineStats FileData::Pipeline() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  PipelineStats st;
  st.queued = queued_.size();
  const int64_t now = NowMs();
  for (const auto& [ino, q] : queued_) {
    st.oldest_age_ms = std::max(st.oldest_age_ms, now - q.since_ms);
    if (q.failures > 0) st.retrying++;
  }
  return st;
}

Status FileData::SyncAll() {
  const size_t left = CommitAll(std::chrono::hours(24));
  if (left == 0) return Status::Ok();
  return Status(Code::kInternal,
                std::to_string(left) + " file(s) could not be committed; see the log");
}

}  // namespace stampfs
