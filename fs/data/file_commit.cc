// FileData: committing an open file's changes (conflicts: file_conflict.cc).
//
// Protocol: the blob first (Put Blob up to single_put_limit but for a rewrite
// layout, else the remaining dirty blocks staged and Put Block List naming
// untouched blocks by their committed ids), conditional on If-Match:<base ETag>
// or If-None-Match:* for a file without a blob; then the entry merge (size,
// mtime, blob ETag, block size). Every blob write carries a commit id (blob
// metadata "commit"), journaled before it is sent; an answer that leaves the
// outcome open (412/409, timeout, cut connection) is resolved by reading the
// blob's id: ours means the write landed. A 412/409 from a blob without one of
// our ids means another writer committed first: ConflictPolicy decides. A
// failed entry merge after a committed blob is repaired by the next access
// (Adopt, file_recovery.cc); nothing is deleted on an unconfirmed 404.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>

#include "fs/namespace/blob_times.h"
#include "fs/data/file_data.h"
#include "fs/namespace/inode_table.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/data/pin_range.h"
#include "storage/stats.h"

namespace stampfs {

extern Counter g_data_up;  // file_blocks.cc

namespace {

// Files moved to the rewrite layout (fs/data/block_layout.h).
Counter g_relayouts{"relayouts"};

// Smaller files are put whole whatever their changes.
constexpr uint64_t kRewriteMinFile = 4 * kMinBlockSize;

bool IsConflict(const Status& s) {
  return s.Is(Code::kPreconditionFailed) || s.Is(Code::kAlreadyExists);
}

// Outcomes after which the request may have been applied (or may still be).
// A 409 other than BlobAlreadyExists (a lease, say) is one: it may answer a
// resent request whose first copy landed (simulation seed 6785).
bool MayHaveLanded(const Status& s) {
  return s.Is(Code::kTimeout) || s.Is(Code::kTransport) || s.Is(Code::kCancelled) ||
         s.Is(Code::kInternal) || s.Is(Code::kConflict);
}

// Blob metadata "commit": the id of the commit that wrote this version.
constexpr char kCommitIdMetadata[] = "commit";
constexpr size_t kMaxCommitIds = 8;

std::string CommitIdText(uint64_t id) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// Staged blocks the commit named are not on the server (uncommitted blocks
// expire, and any commit of the blob discards them).
bool StagedBlocksGone(const Status& s) {
  return s.Is(Code::kInvalidArgument) && s.service_code() == "InvalidBlockList";
}

}  // namespace

Status FileData::CommitLocked(const FilePtr& fp, Lock& lock) {
  OpenFile& f = *fp;
  while (f.busy) f.cv.wait(lock);
  if (!f.loaded || !f.dirty) return Status::Ok();
  f.busy = true;
  f.committing_size = f.size;
  f.committing_mtime_ns = f.mtime_ns;
  f.committing = true;
  WaitIdle(f, lock);
  Status s;
  for (int round = 0; round < 3; ++round) {
    f.resend = false;
    s = CommitBusy(fp, lock);
    if (!f.resend) break;
  }
  f.committing = false;
  f.busy = false;
  f.cv.notify_all();
  return s;
}

// REQUIRES: `lock` holds fp->mu; fp->busy; idle.
Status FileData::CommitBusy(const FilePtr& fp, Lock& lock) {
  OpenFile& f = *fp;
  f.upload_error = Status::Ok();  // failed background uploads are retried here
  // The entry as cached (within the TTL): the blob write's condition comes
  // from the open file's base version, not from the entry; a change another
  // mount made since fails that write (a conflict) or the entry merge (a
  // removed entry: see Committed; a newer version: CommitFile keeps it).
  auto st = ns_.GetFile(f.ino, false);
  if (st.status().Is(Code::kNotFound)) {
    // Unlinked on this mount: what was written since goes with it (POSIX).
    if (f.NameRemoved() || ns_.RemovedHere(f.ino)) return DropChanges(f);
    // Gone for a reason this mount did not see (another mount renamed or
    // removed it or a directory above it, or a rename replaced it): the data
    // is kept as a conflict copy, never dropped on that inference (it was:
    // flush and close returned 0). A send of ours that landed unanswered at
    // the old name is no file's once the copy holds the data: swept (by id).
    const std::string sent_to = f.blob;
    const std::vector<uint64_t> sent = f.commit_ids;  // Bind clears them
    Status kept = OnConflict(fp, lock, st.status());
    if (!f.dirty && !sent.empty()) LeftUnanswered(sent_to, sent);
    return kept;
  }
  STAMPFS_RETURN_IF_ERROR(st);
  const bool moved_away = st->blob != f.blob && !Moved(f, *st);
  f.path = st->path;
  if (moved_away) {
    // Renamed (here or elsewhere), and the blob at the new name is not the
    // rename's copy of this file's base version: another writer's data.
    return OnConflict(fp, lock,
                      Status(Code::kPreconditionFailed, f.path + " changed after it was renamed"));
  }
  f.attr = st->attr;
  // Each attempt carries a new commit id, journaled before it is sent. An
  // answer that does not say whether the blob now holds this data (412/409,
  // which may answer our own resent or earlier request; a timeout; a cut
  // connection) is resolved by reading the blob's id: this attempt's means
  // it landed; an earlier attempt's means this file's older data landed, and
  // the commit goes on on top of it; anything else is another writer's.
  for (int attempt = 0;; ++attempt) {
    STAMPFS_RETURN_IF_ERROR(NewCommitId(f));
    const Condition cond = options_.conflict == ConflictPolicy::kOverwrite ? Condition::None()
                           : f.base_etag.empty() ? Condition::IfNoneMatchAny()
                                                 : Condition::IfMatch(f.base_etag);
    auto etag = WriteBlob(fp, lock, f.blob, cond, true, nullptr);
    if (StagedBlocksGone(etag.status())) {
      LogInfo(f.path + ": staged blocks expired; staging them again");
      Unstage(f);
      etag = WriteBlob(fp, lock, f.blob, cond, true, nullptr);
    }
    if (etag.ok()) return Landed(fp, lock, *etag);
    const Status why = etag.status();
    if (!IsConflict(why) && !MayHaveLanded(why)) return why.WithContext("commit " + f.path);
    std::string stored;
    auto own = OwnCommitStored(f, &stored);
    if (!own.ok()) {
      // Unknown whose the blob is: nothing is decided; the data stays journaled.
      LogWarning(f.path + ": commit outcome unknown (" + why.ToString() + "), and reading " +
                 "the blob failed: " + own.status().ToString());
      return why.WithContext("commit " + f.path);
    }
    if (*own == f.commit_ids.back()) {
      LogInfo(f.path + ": the commit landed although its answer was " + why.ToString());
      return Landed(fp, lock, stored);
    }
    if (*own != 0 && attempt < 2) {
      LogInfo(f.path + ": an earlier commit of this file landed late; committing on top of it");
      f.base_etag = stored;
      continue;
    }
    if (!IsConflict(why)) return why.WithContext("commit " + f.path);
    return OnConflict(fp, lock, why);  // a new file: its name is another's
  }
}

// The blob holds this file's data as version `etag`: the entry follows.
// REQUIRES: `lock` holds fp->mu; fp->busy.
Status FileData::Landed(const FilePtr& fp, Lock& lock, const std::string& etag) {
  if (ns_.IsPending(fp->ino)) return CommittedNew(fp, lock, etag);
  const Status s = Committed(*fp, etag);
  if (!s.Is(Code::kNotFound)) return s;
  // No entry at the name this mount knows (confirmed by a point read): the
  // blob just written belongs to no file. Removed here: the data goes with
  // the name (POSIX). Otherwise another mount removed or renamed it (a
  // rename is not told apart from a removal): the data is kept as a conflict
  // copy, made while the blob still holds it, never dropped on that inference.
  OpenFile& f = *fp;
  f.base_etag = etag;
  Status kept = Status::Ok();
  if (f.NameRemoved() || ns_.RemovedHere(f.ino)) {
    kept = DropChanges(f);
  } else {
    kept = OnConflict(fp, lock, s);
  }
  if (!f.dirty) {  // saved as a copy (or dropped): the blob is no file's
    blob_requests_++;
    blobs_.Delete(options_.container, f.blob, Condition::IfMatch(etag)).PermitUnchecked();
  }  // else no copy was saved: the journal still reads what is not local from it
  return kept;
}

// The id of the next attempt, in the journal before the request that carries
// it is sent: the newest one while the content is what it named, else a new
// one. The last kMaxCommitIds are kept until a commit is known to have landed.
// REQUIRES: f.mu held.
Status FileData::NewCommitId(OpenFile& f) {
  if (!f.commit_ids.empty() && f.id_edits == f.edits) return Status::Ok();
  f.id_edits = f.edits;
  f.commit_ids.push_back(NewWriterTag());
  if (f.commit_ids.size() > kMaxCommitIds) f.commit_ids.erase(f.commit_ids.begin());
  return Journal(f);
}

// The id of this file's commit the blob holds (0: no blob, or not one of
// ours), and the blob's ETag in *etag.
Result<uint64_t> FileData::OwnCommitStored(const OpenFile& f, std::string* etag) {
  return CommitIdAt(f.blob, f.commit_ids, etag);
}

Result<uint64_t> FileData::CommitIdAt(const std::string& blob, const std::vector<uint64_t>& ids,
                                      std::string* etag) {
  blob_requests_++;
  auto props = blobs_.GetProperties(options_.container, blob);
  if (props.status().Is(Code::kNotFound)) return uint64_t{0};
  STAMPFS_RETURN_IF_ERROR(props);
  auto it = props->metadata.find(kCommitIdMetadata);
  if (it == props->metadata.end()) return uint64_t{0};
  for (uint64_t id : ids) {
    if (CommitIdText(id) == it->second) {
      *etag = props->etag;
      return id;
    }
  }
  return uint64_t{0};
}

// The first commit of a deferred create: its entry is inserted now, naming
// the blob just written, before the data counts as committed. A name another
// mount took meanwhile (or a removed directory) withdraws the blob and saves
// the data as a conflict copy; any other failure keeps the data dirty, based
// on the blob just written.
// REQUIRES: `lock` holds fp->mu; fp->busy.
Status FileData::CommittedNew(const FilePtr& fp, Lock& lock, const std::string& etag) {
  OpenFile& f = *fp;
  auto inserted = ns_.CommitFile(f.ino, f.size, f.mtime_ns, etag, "", f.layout.base(), f.blob);
  if (inserted.status().Is(Code::kStale)) {
    // Renamed while the data was sent (git's config.lock -> config): the
    // version just written belongs to no entry; the commit goes again, to
    // the new name (CommitLocked).
    LogDebug(f.path + ": " + inserted.status().message());
    blob_requests_++;
    blobs_.Delete(options_.container, f.blob, Condition::IfMatch(etag)).PermitUnchecked();
    f.resend = true;
    return inserted.status();
  }
  if (inserted.status().Is(Code::kAlreadyExists) || inserted.status().Is(Code::kNotFound)) {
    // The name is another's, or its directory gone.
    blob_requests_++;
    blobs_.Delete(options_.container, f.blob, Condition::IfMatch(etag)).PermitUnchecked();
    if (inserted.status().Is(Code::kNotFound) && f.size == 0) {
      // An empty new file in a directory removed meanwhile: as if the
      // create had failed (ENOENT), nothing to keep.
      ns_.AbandonPending(f.ino);
      DropChanges(f).PermitUnchecked();
      return inserted.status();
    }
    return OnConflict(fp, lock, inserted.status());
  }
  if (!inserted.ok()) {
    f.base_etag = etag;
    Journal(f).PermitUnchecked();
    return inserted.status().WithContext("commit " + f.path);
  }
  return Committed(f, etag, &*inserted);
}

// Writes the file's current content to `blob`. `same_blob`: the blob the
// data is based on (untouched blocks keep their committed ids, staged ones
// are used); otherwise every block is uploaded (a conflict copy).
Result<std::string> FileData::WriteBlob(const FilePtr& fp, Lock& lock, const std::string& blob,
                                        const Condition& cond, bool same_blob, uint64_t* lost) {
  OpenFile& f = *fp;
  const uint64_t tag = same_blob ? f.tag : NewWriterTag();
  std::optional<BlockPlan> plan;
  // Ski rental: an in-place commit pays what it uploads beyond what was
  // written; once that adds up to half the file, the file moves to the
  // rewrite layout (one upload of the whole file). Put whole, it adds up at once.
  if (same_blob && f.layout.base() > RewriteBlockSize(f.size) && RewritesInPlace(f)) {
    uint64_t upload = f.size;
    if (!PutsWhole(f, true)) {
      auto planned = PlanBlocks(f, true, tag);
      STAMPFS_RETURN_IF_ERROR(planned);
      upload = PlannedBytes(f, *planned);
      plan = std::move(*planned);
    }
    f.rewrite_waste += upload - std::min(upload, f.written);
    if (f.rewrite_waste >= f.size / 2) {
      STAMPFS_RETURN_IF_ERROR(Relayout(f, lock));
      plan.reset();
      STAMPFS_RETURN_IF_ERROR(NewCommitId(f));  // an id names one layout too
    }
  }
  const BlobMetadata meta =
      MetadataFor(f, same_blob && !f.commit_ids.empty() ? f.commit_ids.back() : 0);
  if (PutsWhole(f, same_blob)) {
    const uint64_t count = f.layout.CountFor(f.size);
    PinRange pins(cache_, f.cache_id, 0, count == 0 ? 0 : count - 1);
    STAMPFS_RETURN_IF_ERROR(MaterializeAll(f, lock, !same_blob, lost));
    HttpBody body;
    body.size = f.size;
    const int fd = f.fd;
    body.reader = [fd](uint64_t at, char* out, size_t len) -> size_t {
      ssize_t n = pread(fd, out, len, static_cast<off_t>(at));
      return n < 0 ? 0 : static_cast<size_t>(n);
    };
    blob_requests_++;
    g_data_up.Add(f.size);
    return blobs_.Put(options_.container, blob, body, meta, cond);
  }
  if (!plan) {
    auto planned = PlanBlocks(f, same_blob, tag);
    STAMPFS_RETURN_IF_ERROR(planned);
    plan = std::move(*planned);
  }
  STAMPFS_RETURN_IF_ERROR(RunUploads(fp, lock, blob, tag, plan->uploads, same_blob, lost));
  blob_requests_++;
  return blobs_.PutBlockList(options_.container, blob, plan->refs, meta, cond, LocalContentMd5(f));
}

// One Put Blob: a small file, unless it has the rewrite layout (then its
// unchanged blocks are kept by id).
bool FileData::PutsWhole(const OpenFile& f, bool same_blob) const {
  return f.size <= options_.single_put_limit && !(same_blob && IsRewriteLayout(f.layout));
}

// The commit changes a small part of an existing version (at most half of
// the file was written) of a file worth keeping in blocks, that fits the
// cache (a relayout makes all of it local).
bool FileData::RewritesInPlace(const OpenFile& f) {
  return !f.base_etag.empty() && f.remote_size > 0 && f.size >= kRewriteMinFile &&
         f.written <= f.size / 2 && f.size <= cache_.Capacity() / 4;
}

// Bytes of the blocks the plan sends (uploaded now or staged before).
uint64_t FileData::PlannedBytes(const OpenFile& f, const BlockPlan& plan) const {
  uint64_t bytes = 0;
  for (size_t k = 0; k < plan.refs.size(); ++k) {
    if (plan.refs[k].source != BlockRef::Source::kCommitted) bytes += f.layout.LengthIn(k, f.size);
  }
  return bytes;
}

// Moves the file to the rewrite layout for its size: every byte local
// (fetched from the base version when not cached), then indexed as dirty
// blocks of the new layout, so this commit uploads the whole file once.
// REQUIRES: `lock` holds f.mu; f.busy; idle.
Status FileData::Relayout(OpenFile& f, Lock& lock) {
  const BlockLayout next(RewriteBlockSize(f.size));
  const uint64_t count = f.layout.CountFor(f.size);
  // Held until the new rows are in: clean blocks stay unevicted meanwhile.
  PinRange pins(cache_, f.cache_id, 0, count == 0 ? 0 : count - 1);
  STAMPFS_RETURN_IF_ERROR(MaterializeAll(f, lock, false, nullptr));
  std::vector<BlockRow> rows;
  for (uint64_t k = 0; k < next.CountFor(f.size); ++k) {
    rows.push_back(BlockRow{f.cache_id, k, next.StartOf(k), next.SizeOf(k),
                            next.LengthIn(k, f.size), BlockState::kDirty, 0});
  }
  STAMPFS_RETURN_IF_ERROR(cache_.Relayout(f.cache_id, next.base(), rows));
  LogDebug(f.path + ": rewritten in place: blocks of " + std::to_string(next.base()) +
           " bytes from now on (were " + std::to_string(f.layout.base()) + ")");
  g_relayouts.Add();
  f.edits++;  // the blocks the data is sent in changed (NewCommitId)
  f.layout = next;
  f.rewrite_waste = 0;
  return Status::Ok();
}

// Every block of a small file local (fetched from the base version when not
// cached). `lossy`: a base that is gone reads as zeros, counted in *lost.
// REQUIRES: `lock` holds f.mu; f.busy; the blocks are pinned.
Status FileData::MaterializeAll(OpenFile& f, Lock& lock, bool lossy, uint64_t* lost) {
  const uint64_t count = f.layout.CountFor(f.size);
  for (uint64_t k = 0; k < count; ++k) {
    bool relocked = false;
    Status s = EnsureLocal(f, lock, k, &relocked);
    if (s.ok()) continue;
    if (!lossy || !(s.Is(Code::kPreconditionFailed) || s.Is(Code::kNotFound))) return s;
    if (lost) *lost += f.layout.LengthIn(k, std::min(f.size, f.remote_size));
  }
  return Status::Ok();
}

// The block list: staged blocks as uncommitted, untouched blocks whose
// committed block still has this layout's range by their committed id, and
// everything else uploaded now.
Result<FileData::BlockPlan> FileData::PlanBlocks(OpenFile& f, bool same_blob, uint64_t tag) {
  const uint64_t count = f.layout.CountFor(f.size);
  if (count > kMaxBlocks) return Status(Code::kTooLarge, f.path + ": more than 50,000 blocks");
  const auto states = cache_.Blocks(f.cache_id);
  auto state_of = [&](uint64_t k) {
    auto it = states.find(k);
    return it == states.end() ? BlockState::kAbsent : it->second;
  };
  bool reuse = false;
  for (uint64_t k = 0; same_blob && !f.base_etag.empty() && k < count && !reuse; ++k) {
    const BlockState s = state_of(k);
    reuse = (s == BlockState::kAbsent || s == BlockState::kClean) &&
            f.layout.StartOf(k) < f.remote_size;
  }
  std::vector<std::string> committed;
  if (reuse) {
    blob_requests_++;
    auto list = blobs_.GetBlockList(options_.container, f.blob, BlockListType::kCommitted);
    if (list.status().Is(Code::kNotFound)) {
      return Status(Code::kPreconditionFailed, f.path + ": the blob is gone");
    }
    STAMPFS_RETURN_IF_ERROR(list);
    if (list->etag != f.base_etag) {
      return Status(Code::kPreconditionFailed, f.path + ": the blob changed since it was opened");
    }
    committed = ReusableIds(f, *list);
  }
  BlockPlan plan;
  plan.refs.reserve(count);
  for (uint64_t k = 0; k < count; ++k) {
    const BlockState s = state_of(k);
    const std::string id = WriterBlockId(tag, k);
    if (same_blob && s == BlockState::kStaged) {
      plan.refs.push_back({id, BlockRef::Source::kUncommitted});
    } else if ((s == BlockState::kAbsent || s == BlockState::kClean) && k < committed.size() &&
               !committed[k].empty()) {
      plan.refs.push_back({committed[k], BlockRef::Source::kCommitted});
    } else {
      plan.uploads.push_back(k);
      plan.refs.push_back({id, BlockRef::Source::kUncommitted});
    }
  }
  return plan;
}

// Committed block ids that still hold block k of this layout with the same
// bytes ("" where not): the committed list must follow the layout from the
// start, with ids of our width (one width per blob).
std::vector<std::string> FileData::ReusableIds(const OpenFile& f, const BlockList& list) const {
  std::vector<std::string> ids;
  const uint64_t count = f.layout.CountFor(f.size);
  const size_t width = WriterBlockId(0, 0).size();
  uint64_t pos = 0;
  for (size_t i = 0; i < list.committed.size(); ++i) {
    const BlockInfo& b = list.committed[i];
    const bool last = i + 1 == list.committed.size();
    if (b.id.size() != width || pos != f.layout.StartOf(i)) break;
    if (b.size != f.layout.SizeOf(i) && !(last && b.size < f.layout.SizeOf(i))) break;
    if (i < count && f.layout.LengthIn(i, f.size) == b.size && pos + b.size <= f.remote_size) {
      ids.resize(i + 1);
      ids[i] = b.id;
    }
    pos += b.size;
  }
  return ids;
}

// The blob now holds this file's data: the entry is updated, then the cache
// file becomes that version. An entry the table confirmed gone (another mount
// removed or moved it) leaves the blob to nobody: it is deleted. An
// unconfirmed 404 (the table answered 404 for an entry that exists) deletes
// nothing: the changes stay dirty and journaled, based on the blob just
// written, and the commit fails (EIO).
// REQUIRES: f.mu held.
Status FileData::Committed(OpenFile& f, const std::string& etag, const Attr* recorded) {
  const std::string prev = f.base_etag;
  auto attr = recorded ? Result<Attr>(*recorded)
                       : ns_.CommitFile(f.ino, f.size, f.mtime_ns, etag, prev, f.layout.base());
  if (IsUnexpectedNotFound(attr.status())) {
    f.base_etag = etag;
    Journal(f).PermitUnchecked();
    LogError(f.path + ": data written (blob " + etag + ") but the entry update failed (" +
             attr.status().ToString() + "); the changes stay in the cache journal");
    return attr.status().WithContext("commit " + f.path);
  }
  if (attr.status().Is(Code::kNotFound)) return attr.status();  // Landed decides
  STAMPFS_RETURN_IF_ERROR(cache_.MarkClean(f.cache_id));
  STAMPFS_RETURN_IF_ERROR(cache_.DropFrom(f.cache_id, f.layout.CountFor(f.size)));
  STAMPFS_RETURN_IF_ERROR(cache_.ClearJournal(f.cache_id));
  STAMPFS_RETURN_IF_ERROR(cache_.Rekey(f.cache_id, f.blob, etag));
  f.journaled = false;
  f.dirty = false;
  f.written = 0;
  f.commit_ids.clear();
  f.base_etag = etag;
  f.remote_size = f.size;
  f.entity_stale = !attr.ok();
  f.merged_ctime = attr.ok() ? attr->ctime_ns : 0;
  if (f.entity_stale) {
    // The data is safe in the blob; the entry lags and is repaired by the
    // next access (or open) that sees the blob's ETag differ.
    LogWarning(f.path + ": data committed (blob " + etag +
               ") but the entry update failed: " + attr.status().ToString());
  }
  return Status::Ok();
}

// The file's uncommitted changes have nowhere to go (its name is gone).
// REQUIRES: f.mu held.
Status FileData::DropChanges(OpenFile& f) {
  f.dirty = false;
  f.journaled = false;
  f.commit_ids.clear();
  return cache_.ClearJournal(f.cache_id);
}

// Staged blocks become dirty again: the next commit uploads them anew.
void FileData::Unstage(OpenFile& f) {
  for (const auto& [k, state] : cache_.Blocks(f.cache_id)) {
    if (state != BlockState::kStaged) continue;
    cache_
        .Set(f.cache_id, k, BlockState::kDirty, f.layout.StartOf(k), f.layout.SizeOf(k),
             f.layout.LengthIn(k, f.size))
        .PermitUnchecked();
  }
}

// The file was renamed while open: its blob moved. Follows it when the blob
// at the new name is the rename's copy of this file's base version (false:
// another writer's version is there). Staged blocks belong to the old name.
bool FileData::Moved(OpenFile& f, const FileState& st) {
  if (!f.base_etag.empty() && !IsCopyOf(st, f.base_etag)) return false;
  // A new file renamed while its sends went unanswered: one may have landed
  // at the old name.
  if (f.base_etag.empty() && !f.commit_ids.empty() && !f.blob.empty() && f.blob != st.blob) {
    LeftUnanswered(f.blob, f.commit_ids);
  }
  Unstage(f);
  f.blob = st.blob;
  if (!f.base_etag.empty()) f.base_etag = st.blob_etag;
  return true;
}

// Lets the table be rebuilt from the container alone (names [a-z0-9]), and
// names the commit that wrote the version (`commit_id`, 0: none).
BlobMetadata FileData::MetadataFor(const OpenFile& f, uint64_t commit_id) const {
  BlobMetadata meta{{"mode", std::to_string(f.attr.mode)},
                    {"uid", std::to_string(f.attr.uid)},
                    {"gid", std::to_string(f.attr.gid)},
                    {"mtime", FormatBlobMtime(f.mtime_ns)},
                    {"bsize", std::to_string(f.layout.base())},
                    {"stampfs", "1"}};
  if (commit_id != 0) meta[kCommitIdMetadata] = CommitIdText(commit_id);
  return meta;
}

}  // namespace stampfs
