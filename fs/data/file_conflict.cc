// FileData: a commit another writer won (OnConflict: the commit in
// file_commit.cc got a 412/409 that no commit id of ours explains).
// -o conflict (ConflictPolicy) decides: overwrite; fail, the changes kept in
// the cache journal; or copy (the default): the changes saved as
// NAME.conflict-HOST-TIME beside the file (in the root when its directory is
// gone), and the open shows the version that won.
#include <ctime>
#include <random>

#include "fs/base/log.h"
#include "fs/data/file_data.h"
#include "fs/namespace/names.h"
#include "storage/stats.h"

namespace stampfs {

namespace {

// Commits another mount won first (whatever the policy then did).
Counter g_conflicts{"conflicts"};
// Conflict copies that could not be saved (each is tried again).
Counter g_copy_failures{"conflict_copy_failures"};

}  // namespace

// A new file (pending) gives up its name once the policy has decided: while
// its copy is not saved it stays pending, so the retry proves the conflict
// again (an abandoned name reads as removed here, and its data is dropped).
// REQUIRES: `lock` holds fp->mu; fp->busy.
Status FileData::OnConflict(const FilePtr& fp, Lock& lock, const Status& why) {
  OpenFile& f = *fp;
  if (options_.conflict != ConflictPolicy::kCopy) {
    g_conflicts.Add();
    ns_.AbandonPending(f.ino);
  }
  if (options_.conflict == ConflictPolicy::kOverwrite) return why;
  if (options_.conflict == ConflictPolicy::kFail) {
    LogWarning("conflict: another writer committed " + f.path +
               " first; this mount's changes stay in the cache journal (conflict=fail)");
    return Status(Code::kPreconditionFailed, "conflict on " + f.path + ": " + why.message());
  }
  auto copy = SaveConflictCopy(fp, lock, f.path);
  if (!copy.ok()) {
    // Not done: the data is in no blob yet. The failure is the copy's (a
    // timeout, say), never a settled conflict, so the commit stays queued
    // and the next attempt proves the conflict again and saves the copy.
    g_copy_failures.Add();
    LogError("conflict on " + f.path + ": saving this mount's data as a copy failed (" +
             copy.status().ToString() + "); it stays in the cache journal and is tried again");
    return copy.status().WithContext("conflict on " + f.path + ": no copy saved yet");
  }
  g_conflicts.Add();
  ns_.AbandonPending(f.ino);
  LogWarning("conflict: another writer committed " + f.path +
             " first; this mount's data was saved as " + *copy + " (" + why.ToString() + ")");
  // This open now shows the version that won.
  auto st = ns_.GetFile(f.ino, true);
  FileState now;
  if (st.ok()) {
    now = *st;
  } else {
    now.attr = f.attr;
    now.attr.size = 0;
    now.blob = f.blob;
    now.path = f.path;
  }
  cache_.Discard(f.cache_id).PermitUnchecked();
  cache_.Release(f.cache_id);
  f.loaded = false;
  f.conflicts++;  // the opens made before now write no more (FileData::Write)
  STAMPFS_RETURN_IF_ERROR(Bind(f, now));
  // A new file whose name another mount's file took: this inode has no name
  // any more, and what is written to it would be committed nowhere.
  f.name_lost = !st.ok();
  return Status(Code::kPreconditionFailed,
                "conflict on " + f.path + ": this mount's data was saved as " + *copy);
}

// Creates NAME.conflict-HOST-TIME beside `path` (in the root when its
// directory is gone) holding the open file's data; returns its path.
// REQUIRES: `lock` holds fp->mu; fp->busy.
Result<std::string> FileData::SaveConflictCopy(const FilePtr& fp, Lock& lock,
                                               const std::string& path) {
  OpenFile& f = *fp;
  std::vector<uint64_t> held;
  std::string dir = ParentPath(path);
  auto parent = Resolve(dir, &held);
  if (parent.status().Is(Code::kNotFound) || (parent.ok() && !parent->IsDir())) {
    dir = "/";
    parent = Resolve(dir, &held);
  }
  Result<Attr> created = Status(Code::kAlreadyExists, "no name tried");
  std::string name;
  for (int attempt = 0; attempt < kConflictNameAttempts && created.status().Is(Code::kAlreadyExists);
       ++attempt) {
    if (!parent.ok()) break;
    name = ConflictName(BaseName(path), attempt);
    created = ns_.Create(parent->ino, name, f.attr.mode & 07777, f.attr.uid, f.attr.gid);
    if (created.status().Is(Code::kNotFound) && dir != "/") {
      // The directory was removed after this mount last listed it.
      dir = "/";
      parent = Resolve(dir, &held);
      created = Status(Code::kAlreadyExists, "no name tried in /");
      attempt = -1;
    }
  }
  ForgetLookups(held);
  STAMPFS_RETURN_IF_ERROR(parent);
  STAMPFS_RETURN_IF_ERROR(created);
  const std::string copy_path = JoinPath(dir, name);
  auto cst = ns_.GetFile(created->ino, true);
  uint64_t lost = 0;
  Status s = cst.status();
  if (s.ok()) {
    auto etag = WriteBlob(fp, lock, cst->blob, Condition::IfNoneMatchAny(), false, &lost);
    s = etag.status();
    if (s.ok()) {
      s = ns_.CommitFile(created->ino, f.size, f.mtime_ns, *etag, "", f.layout.base()).status();
    }
  }
  ns_.Forget(created->ino, 1);
  STAMPFS_RETURN_IF_ERROR(s.WithContext("conflict copy " + copy_path));
  if (lost > 0) {
    LogWarning(copy_path + ": " + std::to_string(lost) + " bytes of the version the changes " +
               "were based on were no longer readable; they are zeros in the copy");
  }
  return copy_path;
}

std::string FileData::ConflictName(const std::string& base, int attempt) const {
  const time_t t = static_cast<time_t>(Now() / 1000000000);
  struct tm utc;
  gmtime_r(&t, &utc);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  std::string suffix = ".conflict-" + options_.host + "-" + stamp;
  // Names taken within the same second: a random tag (a counter collided
  // with other mounts' and earlier copies' counters).
  if (attempt > 0) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char tag[17];
    snprintf(tag, sizeof(tag), "%016llx", static_cast<unsigned long long>(rng()));
    suffix += "-" + std::string(tag, 8);
  }
  std::string head = base;
  if (head.size() + suffix.size() > kMaxNameBytes) head.resize(kMaxNameBytes - suffix.size());
  return head + suffix;
}

}  // namespace stampfs
