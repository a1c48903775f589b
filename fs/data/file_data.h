// File contents: block blobs by path, written back through the block cache.
//
// Layout (fs/data/block_layout.h): files up to single_put_limit are committed with
// one Put Blob; larger ones are block blobs whose block k covers a fixed
// range given the file's base block size (entry property and blob metadata
// "bsize"). A file rewritten in place moves to a finer base once and is a
// block blob from then on, whatever its size (FileData::WriteBlob).
//
// Write-back: writes land in the file's sparse cache file (cache/block_cache.h).
// A partially overwritten block of a committed version is fetched first
// (read-modify-write). Full dirty blocks of a file that will be a block blob
// are staged with Put Block in the background (bounded per file) while the
// writer goes on. flush/fsync/close commit: the remaining dirty blocks, then
// Put Block List naming untouched blocks by their committed ids, conditional
// on If-Match:<blob ETag the data is based on> (If-None-Match:* for a new
// file); then Namespace::CommitFile (size, mtime, blob ETag, block size).
//
// Invariant: data not yet committed is always in the cache (dirty and staged
// blocks are never evicted) and named by the dirty journal, so a conflict copy
// or a replay after a crash can always be built from it. When the cache is
// full of uncommitted data, a writer waits; one whose own uncommitted data is
// a large share of the cache commits what it has so far (a checkpoint).
//
// Conflicts (412/409 on the commit) follow ConflictPolicy. Reads are ranged
// GETs of whole blocks pinned with If-Match:<ETag>; a sequential reader gets
// the blocks ahead in one streamed GET (fs/data/file_stream.cc); a version that
// changed under an open file is an EIO for the read, never a mix of versions.
//
// All opens of one inode on this mount share one OpenFile.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "fs/data/block_layout.h"
#include "fs/data/dir_readahead.h"
#include "fs/namespace/namespace.h"
#include "fs/data/recent_versions.h"
#include "fs/data/work_queue.h"
#include "storage/blob_store.h"
#include "storage/cancel.h"

namespace stampfs {

enum class ConflictPolicy {
  kCopy,       // this writer's data goes to NAME.conflict-HOST-TIME; EIO
  kFail,       // EIO; the data stays in the cache journal for recovery
  kOverwrite,  // commit unconditionally
};
Result<ConflictPolicy> ParseConflictPolicy(const std::string& text);

struct FileDataOptions {
  std::string container;
  uint64_t block_size = kDefaultBlockSize;  // base block size of new files
  uint64_t single_put_limit = 8ull << 20;   // files up to this size: one Put Blob
  int upload_threads = 4;
  int fetch_threads = 4;
  size_t max_uploads_per_file = 8;        // staged blocks in flight per file
  uint64_t stream_window = 256ull << 20;  // read-ahead: bytes per streamed GET (<= cache / 4)
  int64_t stream_stall_ms = 20000;        // a stream with no byte for this long fails
  // Read-ahead across a directory's small files (fs/data/dir_readahead.h): files
  // fetched ahead of a reader going through the listing (0: off), the
  // largest such file, GETs at once.
  size_t dir_readahead = 32;
  uint64_t dir_readahead_size = 1ull << 20;
  int dir_readahead_threads = 16;
  ConflictPolicy conflict = ConflictPolicy::kCopy;
  std::string host;                          // in conflict copy names; default gethostname()
  int64_t backpressure_patience_ms = 10000;  // then a writer goes over the cap (logged)
  std::function<int64_t()> now_ns;           // clock for mtimes and names (tests)
  // -o commit=async: close makes the changes durable in the cache journal and
  // returns; the commit pipeline commits them commit_delay_ms after the last
  // close (fsync commits at once). Otherwise (commit=close) flush commits.
  bool async_commit = false;
  int64_t commit_delay_ms = 500;
  // Commits uploading at once; 0 runs no pipeline thread: the owner calls
  // CommitDue (the simulation's deterministic schedule). The pipeline runs
  // kCommitsPerUploadSlot times as many commits: a commit whose upload is
  // done gives its slot to the next one while its entry change waits for
  // the directory's transaction, so transactions fill up and uploads never
  // stop for them.
  int commit_threads = 16;
  // Closed files waiting for their commit; a close beyond this waits (each
  // holds a cache file open).
  size_t max_queued = 4096;
};

// What the commit pipeline holds (stampfs stat).
struct PipelineStats {
  uint64_t queued = 0;  // closed files and directory attribute changes waiting for their commit
  int64_t oldest_age_ms = 0;   // since the oldest of them was closed
  uint64_t retrying = 0;       // of which a commit failed and is retried
};

struct OpenFlags {
  bool truncate = false;  // O_TRUNC
  bool created = false;   // the entry was just created: commit even when empty
  bool writable = false;  // O_WRONLY/O_RDWR: validate the blob version first
};

struct OpenResult {
  bool keep_cache = false;  // the kernel's page cache still holds this version
  // Identifies the open for Write: a conflict copy saved while a file is open
  // ends the writes of every open made before it (FileData::Write).
  uint64_t handle = 0;
};

// Write's `handle` when the caller holds no OpenResult (tests, replay).
inline constexpr uint64_t kAnyHandle = ~uint64_t{0};

class FileData {
 public:
  static constexpr int kCommitsPerUploadSlot = 4;
  static constexpr std::ptrdiff_t kMaxUploadSlots = 1024;

  FileData(Namespace& ns, BlobStore& blobs, BlockCache& cache, FileDataOptions options);
  ~FileData();

  Result<OpenResult> Open(uint64_t ino, OpenFlags flags);
  Result<size_t> Read(uint64_t ino, char* buf, size_t size, uint64_t offset);
  // `append` (O_APPEND): at the open file's end; `offset` is ignored.
  // kPreconditionFailed (EIO) when a conflict copy was saved since `handle`
  // was opened: the open file shows the winning version now, and a write
  // meant for the data that went to the copy must not land on it (a shell's
  // `>` flushes the new file on close(3) after dup2, then writes fd 1).
  Result<size_t> Write(uint64_t ino, const char* buf, size_t size, uint64_t offset,
                       bool append = false, uint64_t handle = kAnyHandle);
  // flush(2) (every close): commits the file if it has changes; with
  // async_commit, journals them instead.
  Status Flush(uint64_t ino);
  // fsync/fdatasync: the file's changes are committed when it returns.
  Status Sync(uint64_t ino);
  // fsyncdir, syncfs: every change of this mount committed (or failed).
  Status SyncAll();
  // Drops one open; the last one commits changes left (async_commit: makes
  // them durable in the journal and queues the commit).
  Status Release(uint64_t ino);
  // Changes the size of a file, open or not.
  Status Truncate(uint64_t ino, uint64_t size);
  // fallocate(2) mode 0 as a size change; other modes are not supported.
  Status Fallocate(uint64_t ino, int mode, uint64_t offset, uint64_t length);
  // Size and mtime of a file open on this mount (they win over the entry's).
  bool OverrideAttr(uint64_t ino, Attr* attr);
  // The attributes of a file open here, from the open file alone (its entry
  // may already name another file while a rename over it finishes).
  std::optional<Attr> OpenAttr(uint64_t ino);
  // The file's name changed: a journal row of its changes follows (a replay
  // after a crash commits them under the new name).
  void Renamed(uint64_t ino);
  // Told of every inode whose size or data this mount learned changed under
  // the kernel's cached copy (another tool's version adopted at open or at a
  // first read): the kernel's attributes of it are to be dropped, so a read
  // past the size it knew asks again. Set before serving (not synchronized).
  void OnKernelStale(std::function<void(uint64_t ino)> listener) {
    std::lock_guard<std::mutex> lock(kernel_stale_mu_);
    kernel_stale_ = std::move(listener);
  }
  // Another writer changed the inode's entry (fs/admin/foreign_view.h, on
  // its own thread): tells the listener, if any.
  void KernelStale(uint64_t ino) {
    std::lock_guard<std::mutex> lock(kernel_stale_mu_);
    if (kernel_stale_) kernel_stale_(ino);
  }
  // A rename copied the file's blob (Namespace::OnBlobMoved): its cached
  // version is the copy's now.
  void BlobMoved(const BlobMove& move);
  // chmod, chown, utimens: the entry; a file not open here also gets them in
  // its blob's metadata (fs/data/file_times.cc).
  Result<Attr> SetAttr(uint64_t ino, const SetAttrRequest& request);
  // The file's name is gone: its blob, at the version `etag` the entry named
  // (or this mount's last commit of it), is deleted; a blob of a new file of
  // that name is never touched.
  // While open here, its data is made local first: the open file lives on
  // in the cache alone (read, write, fstat with st_nlink 0, ftruncate,
  // fsync), nothing written is committed, and its blob is deleted now, so
  // a new file of the name is a new file, not a conflict.
  // `inode_record`: a hard-linked file's last name went; its inode record
  // is dropped after the blob (Namespace::DropInodeRecord).
  void Unlinked(uint64_t ino, const std::string& blob, const std::string& etag,
                bool inode_record = false);
  // What Namespace::Unlink returned: the last name of a regular file (a
  // hard-linked one's included) is Unlinked; other names keep a linked file.
  void Unlinked(const FileState& gone);
  // Before a rename over `ino`, which overwrites its blob: an open file's
  // data is made local (Unlinked after the rename keeps it).
  void BeforeRemoval(uint64_t ino);
  // Before rename(parent/name -> new_parent/new_name) (fs/fuse/fuse_ops.cc). With
  // async_commit, commits queued changes of what moves: a directory's files
  // (all), the source (unless it is a create not committed yet renamed to a
  // free name, which moves in memory), a regular target; for an exchange
  // both, new files included, so that no pipeline commit runs against the
  // half-done exchange or the rename's move of the source's row. Returns
  // the regular file the rename will replace (BeforeRemoval done), else 0.
  // Until RenameDone(that file), an open of it makes its data local at once
  // (as BeforeRemoval does for the opens before): the rename's copy
  // overwrites the blob it was bound to.
  uint64_t BeforeRename(uint64_t parent, const std::string& name, uint64_t new_parent,
                        const std::string& new_name, bool exchange);
  // The rename BeforeRename prepared is over (done or failed); `replaced`:
  // what BeforeRename returned.
  void RenameDone(uint64_t replaced);
  void DeleteBlobWhenUnused(uint64_t ino, const std::string& blob,
                            const Condition& cond = Condition::None(), bool inode_record = false);
  // Commits what the dirty journal holds from an earlier run (after a crash),
  // or turns it into conflict copies. Run before serving.
  Status ReplayJournal();
  // At shutdown (SIGTERM, umount): commits every file with changes, open or
  // kept after a failed close, one after another while `budget` lasts (a
  // commit under way is finished, bounded by the request deadlines). What is
  // left stays in the dirty journal for the next mount. Returns how many
  // files were left with changes.
  size_t CommitAll(std::chrono::milliseconds budget);
  // Before an unmount: CommitAll again and again (with pauses) until nothing
  // is left in the dirty journal or `budget` is spent. Returns the paths
  // whose changes are still only in the journal (none: all committed).
  std::vector<std::string> Drain(std::chrono::milliseconds budget);
  // Runs the queued commits that are due (commit_threads == 0), in order.
  // Returns how many ran.
  size_t CommitDue();
  // The mount holds changes of `ino` not committed yet (queued, or kept
  // after a failed commit).
  bool Pending(uint64_t ino);
  PipelineStats Pipeline();
  // Files whose changes are in the dirty journal, not yet in the container.
  uint64_t JournaledFiles() { return cache_.Journaled().size(); }

  bool async() const { return options_.async_commit; }
  // commit=async: while the commit queue holds max_queued files (each keeps
  // its cache file open), a new file (create) and a close of a written one
  // (flush) wait here for the pipeline to make room, where the kernel waits
  // for the answer: writers are slowed, never failed for the bound. An
  // interrupt of the caller ends the wait (kCancelled).
  Status WaitForRoom();
  uint64_t blob_requests() const { return blob_requests_; }

 private:
  using Lock = std::unique_lock<std::mutex>;

  // The read-ahead stream of a file (fs/data/file_stream.cc): one GET of blocks
  // [next, end) of one version, written into the cache file as it arrives.
  // The block arriving is in OpenFile::fetching while `owned`; a block another
  // fetch has or that is cached by then is skipped. Fields GUARDED_BY the
  // file's mu but `owned` (only the stream's thread changes it once it runs)
  // and `cancel` (stops the GET and the stream: WaitIdle).
  struct Stream {
    int64_t cache_id = 0;
    std::string etag;
    BlockLayout layout;
    uint64_t next = 0;  // the block arriving; those below it landed or were skipped
    uint64_t end = 0;
    bool owned = false;
    CancelToken cancel;
  };

  struct OpenFile {
    explicit OpenFile(uint64_t i) : ino(i) {}
    const uint64_t ino;
    uint64_t opening = 0;  // opens between the map lookup and refs++; GUARDED_BY(FileData::mu_)
    // Lock order: FileData::mu_, then OpenFile::mu, then BlockCache's.
    std::mutex mu;
    std::condition_variable cv;  // fetches, uploads and commits finishing
    // Everything below is GUARDED_BY(mu).
    uint64_t refs = 0;
    bool loaded = false;
    int64_t cache_id = 0;
    int fd = -1;
    std::string blob;       // blob name (a rename changes it)
    std::string base_etag;  // committed version the data is based on ("" = none)
    std::string path;
    uint64_t remote_size = 0;  // bytes [0, remote_size) not cached are the base version's
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    Attr attr;  // mode, uid, gid for the blob metadata
    BlockLayout layout;
    uint64_t tag = 0;    // writer tag of this file's block ids
    // Ids of the commits sent since the last one known to have landed (newest
    // last; journaled): a blob carrying one holds this file's data.
    std::vector<uint64_t> commit_ids;
    // Changes of the content or layout (counted); the newest id names the
    // content as of `id_edits`, and attempts that send the same content reuse
    // it, so a send that lands late, after any number of retries through an
    // outage, is still recognised as ours (NewCommitId).
    // (~0: no id names the content, as after a replay: a journaled id may
    // name content written over since.)
    uint64_t edits = 0;
    // `edits` as of the last durable journal write (~0: none): the release
    // after a flush that made the data durable need not sync again.
    uint64_t synced_edits = ~uint64_t{0};
    uint64_t id_edits = ~uint64_t{0};
    bool dirty = false;  // differs from the committed version
    uint64_t written = 0;        // bytes written or truncated since the last commit
    uint64_t rewrite_waste = 0;  // uploaded beyond `written` by in-place commits (this layout)
    bool journaled = false;
    uint64_t journaled_size = 0;
    bool entity_stale = false;  // committed, but the entry merge failed
    int64_t merged_ctime = 0;   // ctime of this mount's last entry merge (0 = none)
    bool busy = false;          // a commit or truncate runs: writers and readers wait
    // A commit holds `mu` while it sends (for a whole request deadline when
    // the service is away): the size and mtime as it began, for attribute
    // answers that must not wait for it (OverrideAttr). Valid while set.
    std::atomic<bool> committing{false};
    bool resend = false;  // a new file renamed while its commit sent: send again
    std::atomic<uint64_t> committing_size{0};
    std::atomic<int64_t> committing_mtime_ns{0};
    bool served = false;        // data of this version reached a reader or writer
    std::set<uint64_t> fetching;
    std::set<uint64_t> uploading;
    Status upload_error;             // first background upload failure
    uint64_t next_read = 0;          // where a sequential reader goes on
    uint64_t prefetched = 0;         // read-ahead issued (or found cached) below this block
    std::shared_ptr<Stream> stream;  // the read-ahead stream, if one runs
    std::string delete_on_close;
    bool drop_record = false;  // after that delete: the inode record (Unlinked)
    uint64_t conflicts = 0;  // conflict copies saved while loaded: OpenResult::handle
    bool name_lost = false;  // a conflict gave its name to another file: writes fail
    // chmod/chown/utimens while loaded, on this version: a last close with
    // nothing to commit writes them to the blob's metadata (SyncAttrsAtClose).
    std::string attrs_changed_on;
    Condition delete_condition;  // of that delete: the version unlinked
    // Its name is gone but it had no blob (a new file unlinked before its
    // first commit): nothing to commit or journal, nothing to delete.
    bool unlinked = false;
    // This mount removed its name (with a blob to delete at the last close,
    // or without one): what is written goes nowhere, by POSIX.
    bool NameRemoved() const { return !delete_on_close.empty() || unlinked; }
  };
  using FilePtr = std::shared_ptr<OpenFile>;

  // A block read pinned to one version, into the cache file.
  struct FetchJob {
    std::string blob, etag;
    int fd = -1;
    uint64_t offset = 0, length = 0;
  };
  struct BlockPlan {
    std::vector<BlockRef> refs;
    std::vector<uint64_t> uploads;
  };

  // file_data.cc: opens, attributes, the journal.
  FilePtr Find(uint64_t ino);
  FilePtr Enter(uint64_t ino);  // the map entry, opening++
  void Leave(const FilePtr& f);
  void EraseIfUnused(uint64_t ino, const FilePtr& f);
  Status Load(OpenFile& f, const OpenFlags& flags);
  Status Bind(OpenFile& f, const FileState& state);
  void Unload(OpenFile& f);
  Status Journal(OpenFile& f, bool durable = false);
  // file_removed.cc: renames, blob moves, removals of open files.
  // The data an open file shows, made local; `pin`: its blocks dirty (never
  // evicted) and none read from the blob again. `warn`: a failure is logged.
  // kNotFound when no open is left (the last close came first): nothing to keep.
  Status KeepLocal(OpenFile& f, Lock& lock, bool pin = true, bool warn = true);
  // Deletes `version` of `blob` (ambiguous answers resolved by reading it).
  void DeleteVersion(const std::string& blob, const std::string& version);
  void DeleteOrphan(const std::string& blob, const Condition& cond);
  // A new file's sends to `blob` whose answers were lost (commit ids `ids`)
  // may have landed, and the file left that name (renamed while pending, or
  // unlinked) while the service could not say: the blob is read once it
  // answers, and deleted (If-Match) when it carries one of the ids. Kept in
  // memory only: after a crash, fsck reports such a blob (blob-without-entry).
  void LeftUnanswered(const std::string& blob, std::vector<uint64_t> ids);
  // Resolves what LeftUnanswered noted (at most once a second unless
  // `now`); returns how many are still open.
  size_t SweepUnanswered(bool now = false);
  // Something is noted and a second has passed since the last sweep (the
  // scheduler hands the sweep to a pipeline thread).
  bool UnansweredDue();
  // The id of `ids` the blob's current version carries (0: none, or no
  // blob), and that version's ETag.
  Result<uint64_t> CommitIdAt(const std::string& blob, const std::vector<uint64_t>& ids,
                              std::string* etag);
  // A hard-linked file's blob moved to another name's path while open here
  // (Namespace::MoveLinkBlob), and its name is about to go, so a read can no
  // longer find the copy (Reread): the open file follows `st`'s copy now.
  void FollowBlobMove(uint64_t ino, const FileState& st);
  void SyncAttrsAtClose(OpenFile& f);  // file_times.cc
  int64_t Now() const { return options_.now_ns(); }
  // file_io.cc: reads, writes, truncation under the file's lock.
  Result<size_t> ReadLocked(const FilePtr& fp, Lock& lock, char* buf, size_t size, uint64_t off);
  Result<size_t> WriteLocked(const FilePtr& fp, Lock& lock, const char* buf, size_t size,
                             uint64_t off, bool append = false);
  Status PrepareWrite(OpenFile& f, Lock& lock, uint64_t off, uint64_t end, bool* relocked);
  Status TruncateLocked(OpenFile& f, Lock& lock, uint64_t size);
  Status Reread(OpenFile& f, Lock& lock, const Status& why);
  // file_stream.cc: read-ahead.
  void Prefetch(const FilePtr& fp, uint64_t off, uint64_t end);
  void RunStream(const FilePtr& fp, const std::shared_ptr<Stream>& st, const FetchJob& job);
  bool Claim(OpenFile& f, Stream& st);
  bool Landed(OpenFile& f, Stream& st, uint64_t k, uint64_t end);
  bool StreamDelivers(const OpenFile& f, uint64_t k) const;
  // file_blocks.cc: fetches, uploads, space.
  Status EnsureLocal(OpenFile& f, Lock& lock, uint64_t k, bool* relocked);
  Status Fetch(const FetchJob& job);
  void CountFetch();
  void DropPartial(const FetchJob& job);
  void StartUpload(const FilePtr& fp, Lock& lock, uint64_t k);
  void ScheduleUploads(const FilePtr& fp, Lock& lock, uint64_t off, uint64_t end,
                       uint64_t old_size);
  Status RunUploads(const FilePtr& fp, Lock& lock, const std::string& blob, uint64_t tag,
                    const std::vector<uint64_t>& blocks, bool same_blob, uint64_t* lost);
  Status PutBlock(const std::string& blob, const std::string& id, int fd, uint64_t offset,
                  uint64_t length);
  void WaitIdle(OpenFile& f, Lock& lock);
  Status Backpressure(const FilePtr& fp, Lock& lock, uint64_t bytes);
  // file_pipeline.cc: the async commit queue.
  void Enqueue(uint64_t ino, int64_t delay_ms);
  void Dequeue(uint64_t ino);
  void RunScheduler();
  void CommitDeferredQueued(uint64_t ino);
  size_t CommitDeferredAll(std::chrono::steady_clock::time_point deadline);
  void CommitQueued(uint64_t ino);
  void Closed(const FilePtr& fp, Lock& lock);
  int64_t NowMs() const { return Now() / 1000000; }
  // file_commit.cc: commits.
  Status CommitLocked(const FilePtr& fp, Lock& lock);
  Status CommitBusy(const FilePtr& fp, Lock& lock);
  Status Landed(const FilePtr& fp, Lock& lock, const std::string& etag);
  Status NewCommitId(OpenFile& f);
  Result<uint64_t> OwnCommitStored(const OpenFile& f, std::string* etag);
  Result<std::string> WriteBlob(const FilePtr& fp, Lock& lock, const std::string& blob,
                                const Condition& cond, bool same_blob, uint64_t* lost);
  Status MaterializeAll(OpenFile& f, Lock& lock, bool lossy, uint64_t* lost);
  bool PutsWhole(const OpenFile& f, bool same_blob) const;
  bool RewritesInPlace(const OpenFile& f);
  uint64_t PlannedBytes(const OpenFile& f, const BlockPlan& plan) const;
  Status Relayout(OpenFile& f, Lock& lock);
  Result<BlockPlan> PlanBlocks(OpenFile& f, bool same_blob, uint64_t tag);
  std::vector<std::string> ReusableIds(const OpenFile& f, const BlockList& list) const;
  // file_digest.cc: base64 MD5 of the content from the cache file ("" unless all local).
  std::string LocalContentMd5(const OpenFile& f);
  // `recorded`: the entry already names this version (CommittedNew).
  Status Committed(OpenFile& f, const std::string& etag, const Attr* recorded = nullptr);
  Status CommittedNew(const FilePtr& fp, Lock& lock, const std::string& etag);
  bool Moved(OpenFile& f, const FileState& state);
  void Unstage(OpenFile& f);
  Status DropChanges(OpenFile& f);
  BlobMetadata MetadataFor(const OpenFile& f, uint64_t commit_id) const;
  // file_conflict.cc: a commit another writer won.
  Status OnConflict(const FilePtr& fp, Lock& lock, const Status& why);
  Result<std::string> SaveConflictCopy(const FilePtr& fp, Lock& lock, const std::string& path);
  // file_recovery.cc: self-healing entries, path resolution, journal replay.
  Result<FileState> Adopt(uint64_t ino);
  Result<FileState> Validate(uint64_t ino, const FileState& state);
  Result<Attr> Resolve(const std::string& path, std::vector<uint64_t>* looked_up);
  void ForgetLookups(const std::vector<uint64_t>& looked_up);
  Status ReplayOne(const CacheFileInfo& info);
  // NAME.conflict-HOST-TIME, then with a random tag once that is taken.
  std::string ConflictName(const std::string& base, int attempt) const;
  static constexpr int kConflictNameAttempts = 32;

  Namespace& ns_;
  BlobStore& blobs_;
  BlockCache& cache_;
  FileDataOptions options_;
  std::mutex mu_;  // guards files_; taken before any OpenFile::mu
  std::map<uint64_t, FilePtr> files_;
  // Files a rename in flight replaces (BeforeRename to RenameDone), once per
  // rename. replace_mu_ is taken last: nothing is locked under it.
  std::mutex replace_mu_;
  std::multiset<uint64_t> replacing_;  // GUARDED_BY(replace_mu_)
  // LeftUnanswered's notes; unanswered_mu_ is taken last.
  struct UnansweredSends {
    std::string blob;
    std::vector<uint64_t> ids;
  };
  std::mutex unanswered_mu_;
  std::vector<UnansweredSends> unanswered_;  // GUARDED_BY(unanswered_mu_)
  int64_t unanswered_swept_ms_ = 0;          // GUARDED_BY(unanswered_mu_)
  bool Replacing(uint64_t ino);
  RecentVersions recent_;  // files closed lately: version and committed attributes
  std::mutex kernel_stale_mu_;                  // the listener may be set while others call it
  std::function<void(uint64_t)> kernel_stale_;  // GUARDED_BY(kernel_stale_mu_)
  std::atomic<uint64_t> blob_requests_{0};
  std::atomic<int> streams_{0};  // running; at most fetch_threads
  // The commit queue: closed files with changes, and directories with a
  // deferred attribute change (Namespace::DeferSetAttr), by inode. Lock
  // order: a file's mu, then queue_mu_.
  struct Queued {
    int64_t due_ms = 0;
    int64_t since_ms = 0;  // first queued (the age stampfs stat shows)
    int failures = 0;      // commits that failed since: backoff
    bool running = false;  // handed to a pipeline thread
  };
  // REQUIRES: queue_mu_. A commit of `what` failed for a reason that may pass.
  void RetryLater(Queued& e, const std::string& what, const Status& s);
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;           // queue changed, or stopping
  std::map<uint64_t, Queued> queued_;          // GUARDED_BY(queue_mu_)
  bool stopping_ = false;                      // GUARDED_BY(queue_mu_)
  std::thread scheduler_;
  // Upload slots of the pipeline's commits (options_.commit_threads of them).
  std::unique_ptr<std::counting_semaphore<kMaxUploadSlots>> upload_slots_;
  // Last members: destroyed first, so no task outlives what it uses.
  std::unique_ptr<WorkQueue> commits_;
  WorkQueue fetches_;
  WorkQueue uploads_;
  std::unique_ptr<DirReadAhead> ahead_;
};

}  // namespace stampfs
