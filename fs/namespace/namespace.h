// The namespace: directories, names and attributes kept in table entities
// keyed by directory, with no FUSE types. fs/fuse/fuse_ops.cc adapts it to the
// kernel; tests drive it directly on the fakes.
//
// Protocol (docs/design.md):
// - Every change to entries of directory D is one entity group transaction on
//   D's partition that also merges D's "." row, so the "." ETag changes with
//   any entry change. With a complete cached listing the merge is
//   If-Match:<cached "." ETag>, and success proves the cache stays exact.
// - mkdir inserts the new "." row first, then the entry in the parent.
// - rmdir checks emptiness, deletes "." If-Match the ETag seen while checking
//   (a concurrent create changed it: ENOTEMPTY), then deletes the entry.
// - create's batch merges the parent's "." row: if it is gone, the batch fails
//   and no file appears in a removed directory.
// - Inode numbers come from ~fs/ino-counter in ranges, by optimistic
//   read-modify-write on its ETag.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/meta_cache.h"
#include "fs/namespace/attr.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/rename_intent.h"
#include "fs/namespace/xattr.h"
#include "storage/blob_store.h"
#include "storage/table_store.h"

namespace stampfs {

// The table answered 404 for rows a point read then found (a service error,
// never taken as a removal): Namespace::ConfirmNotFound.
inline constexpr char kUnexpectedNotFound[] = "UnexpectedNotFound";
inline bool IsUnexpectedNotFound(const Status& s) {
  return s.Is(Code::kInternal) && s.service_code() == kUnexpectedNotFound;
}


// An entry property of a file created here and inserted by its first commit
// (commit=async): when its name was created, which its directory's mtime
// shows from then on, before and after the commit.
inline constexpr char kCreatedProperty[] = "crtime";

// Records on `moved` (a copy of the source entry) that its blob is a copy of
// version `copied_etag` of the source's blob.
void NoteMovedFrom(const std::string& copied_etag, Entity* moved);
// Whether `st`'s blob is a rename's copy of version `etag`.
bool IsCopyOf(const struct FileState& st, const std::string& etag);

struct NamespaceOptions {
  std::string container;
  std::string table;
  int64_t ttl_ms = 1000;  // trust cached metadata this long, then revalidate
  // A revalidation the service has not answered this long keeps the cached
  // copy in use (fs/namespace/offline.h).
  int64_t offline_after_ms = 5000;
  bool read_only = false;
  // False when the credentials cannot delete (a SAS without 'd'): unlink,
  // rmdir and rename, which delete blobs or rows, are refused up front
  // (EACCES) instead of failing half done.
  // mkdir also writes a directory marker blob (fs/namespace/dir_marker.h), and rmdir
  // and directory renames keep markers in step.
  bool dir_markers = false;
  bool can_delete = true;
  std::optional<uint32_t> force_uid;  // -o uid=: shown as owner of everything
  std::optional<uint32_t> force_gid;
  uint32_t umask = 0;         // -o umask=: applied to modes shown
  uint64_t ino_range = 4096;  // inode numbers in the first range; each later one doubles (to 64Ki)
  std::function<int64_t()> now_ms;  // clock for TTLs (tests); default: system clock
  // Another live mount's unfinished rename intents are left to it this long;
  // those of a dead process on this host are rolled forward at once.
  int64_t intent_grace_ms = 10 * 60 * 1000;
};

// What became of one unfinished rename found in ~intents.
struct IntentOutcome {
  RenameIntent intent;
  bool skipped = false;  // another live mount's, within the grace period
  Status status;         // of the roll-forward (or why the row is unreadable)
  bool settled = false;  // the intent row is gone: finished, or dropped with nothing moved
};

struct DirEntry {
  std::string name;
  Attr attr;
  // False for a subdirectory whose own partition (times, link count) is not
  // cached: its attributes are left to a lookup (readdirplus hands none).
  bool attr_complete = true;
};

// The current state of a regular file, for the data path.
struct FileState {
  Attr attr;
  std::string blob;       // blob name
  std::string blob_etag;  // committed blob ETag ("" before the first commit)
  std::string entity_etag;
  std::string path;
  uint64_t block_size = 0;  // base block size of the blob's layout ("bsize"; 0 = not recorded)
  std::vector<std::string> moved_from;  // kMovedFromProperty
  // Unlink of a hard-linked name: the names the inode still has (its blob
  // is theirs, so `blob` is empty).
  uint32_t names_left = 0;
  // Unlink of a hard-linked file's last name: its inode record (count 0) is
  // left for the caller to drop after the blob (Namespace::DropInodeRecord).
  bool inode_record = false;
};

// Files after one in its directory's listing (Namespace::FilesAfter).
struct FilesAhead {
  std::string dir;               // the directory's path
  std::vector<FileState> files;  // regular files with a committed blob, in listing order
};

struct SetAttrRequest {
  std::optional<uint32_t> mode;  // permission bits only
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint64_t> size;  // applied to the entity only (data is fs/file_data's job)
  std::optional<int64_t> atime_ns;
  std::optional<int64_t> mtime_ns;
};
// A blob whose metadata SetAttrWithBlob replaced: its version before and after.
struct BlobVersionChange {
  std::string blob;
  std::string old_etag;
  std::string new_etag;
};
// A rename's server-side copy, pinned to the source's version: blob
// `to_blob` at `to_etag` holds exactly the bytes of `from_blob` at `from_etag`.
struct BlobMove {
  uint64_t ino = 0;
  std::string from_blob, from_etag;
  std::string to_blob, to_etag;
};

class Namespace {
 public:
  Namespace(TableStore& table, BlobStore& blobs, MetaCache* cache, NamespaceOptions options);

  // Creates the table, container, root "." row and ~fs rows when missing
  // (except read-only), and checks that the credentials can read both. A
  // read-write mount then rolls forward the unfinished renames that crashed
  // mounts left (RollForwardIntents(false)).
  Status Init();
  // Settles the mkdirs a crash of the last mount on this cache interrupted
  // (their "." rows without an entry); run by Init before serving.
  void FinishMkdirs();
  // Takes a range of inode numbers now (a mount about to serve writes), so
  // the first creates do not wait for ~fs/ino-counter.
  Status ReserveInoRange();
  // Lists the root's first page into the cache (a mount about to serve): the
  // first lookups and `ls` of the mount point need no request for a TTL,
  // then one "." read. A root of more pages is left to point reads.
  Status ListRoot();

  // Finishes the renames recorded in ~intents: every one (`all`, fsck
  // --repair), or only those no live mount may still be working on (this
  // host's dead processes; other hosts' after intent_grace_ms). Each ends
  // fully renamed; an intent whose rename can no longer happen (its target
  // was taken meanwhile) is dropped with nothing moved.
  Result<std::vector<IntentOutcome>> RollForwardIntents(bool all);

  Result<Attr> Lookup(uint64_t parent, const std::string& name);
  // Lookup without counting a kernel reference (the adapter's own checks).
  Result<Attr> Peek(uint64_t parent, const std::string& name);
  void Forget(uint64_t ino, uint64_t nlookup);
  // Counts a lookup for an entry handed to the kernel by readdirplus.
  void Remember(uint64_t parent, const DirEntry& entry);
  Result<Attr> GetAttr(uint64_t ino);
  // SetAttr of a file no open file of this mount will commit again
  // (fs/namespace/namespace_blob_attrs.cc): a mode, owner or mtime change also
  // reaches the committed blob's metadata (If-Match the ETag its entry
  // names), and the entry records the blob's new ETag in the same merge.
  // `change` is set when the entry names the new version.
  Result<Attr> SetAttrWithBlob(uint64_t ino, const SetAttrRequest& request,
                               BlobVersionChange* change);
  Result<Attr> SetAttr(uint64_t ino, const SetAttrRequest& request);
  // commit=async (fs/namespace/namespace_deferred.cc): chmod, chown or
  // utimens of a committed directory (not the root), journaled here and
  // shown by this mount at once; CommitDeferred puts it in the table.
  // nullopt: not a change that waits (the caller sets it now).
  std::optional<Result<Attr>> DeferSetAttr(uint64_t ino, const SetAttrRequest& request);
  // The directory's deferred change: in the table (or dropped, with a
  // warning, because the directory is gone) when Ok. A change made while
  // this one was on its way stays deferred.
  Status CommitDeferred(uint64_t ino);
  bool HasDeferred(uint64_t ino);
  std::vector<uint64_t> DeferredInos();
  // Commits the changes a crashed run journaled (before serving); returns
  // those still deferred (the service failed), for the pipeline to retry.
  std::vector<uint64_t> ReplayDeferred();
  // Entries of a directory with full attributes (one partition query when not cached).
  Result<std::vector<DirEntry>> ReadDir(uint64_t ino);

  Result<Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                     uint32_t gid);
  Status Rmdir(uint64_t parent, const std::string& name);
  // A regular file entry; kAlreadyExists when the name is taken. `deferred`
  // (creates without O_EXCL): the entry stays in this mount until the file's
  // first commit inserts it (fs/namespace/namespace_pending.cc).
  Result<Attr> Create(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                      uint32_t gid, bool deferred = false);
  // The file was created deferred and its entry is not in the table yet.
  bool IsPending(uint64_t ino);
  // A pending file's attributes (to journal them with its data).
  std::optional<Attr> PendingAttr(uint64_t ino);
  // Its name was taken by another mount before its first commit: forgotten.
  void AbandonPending(uint64_t ino);
  Result<Attr> Symlink(uint64_t parent, const std::string& name, const std::string& target,
                       uint32_t uid, uint32_t gid);
  Result<std::string> ReadLink(uint64_t ino);
  // mknod: a FIFO, socket or device is an entry (type, mode, rdev) with no
  // blob; S_IFREG makes an empty regular file at once (as create with O_EXCL).
  Result<Attr> Mknod(uint64_t parent, const std::string& name, uint32_t mode, uint64_t rdev,
                     uint32_t uid, uint32_t gid);
  // Removes a non-directory entry; returns its last state (the caller removes
  // the blob, at once or after the last close).
  Result<FileState> Unlink(uint64_t parent, const std::string& name);
  // The inode record of a hard-linked file with no name left, once its blob
  // is deleted (FileState::inode_record). The blob goes first: a crash
  // between leaves a record no name uses, which fsck --repair removes with
  // its blob; the other order would leave a blob fsck imports as a file.
  void DropInodeRecord(uint64_t ino);
  // link(2) of a committed regular file (fs/namespace/namespace_links.cc): the new
  // name shares the inode record (created at the first link).
  Result<Attr> Link(uint64_t ino, uint64_t new_parent, const std::string& new_name);
  enum RenameFlags : unsigned { kNoReplace = 1, kExchange = 2 };
  // Returns the blob names that the caller should delete once no file has
  // them open (a replaced target's blob).
  // `moved`: set to the inode renamed.
  Result<std::vector<std::string>> Rename(uint64_t parent, const std::string& name,
                                          uint64_t new_parent, const std::string& new_name,
                                          unsigned flags, uint64_t* moved = nullptr);

  Result<std::string> GetXattr(uint64_t ino, const std::string& name);
  Result<std::vector<std::string>> ListXattr(uint64_t ino);
  enum XattrFlags : int { kXattrCreate = 1, kXattrReplace = 2 };
  Status SetXattr(uint64_t ino, const std::string& name, const std::string& value, int flags);
  Status RemoveXattr(uint64_t ino, const std::string& name);

  // From this mount's cached listing only (no request): up to `max` regular
  // files with a committed blob after `ino` in its directory, in listing
  // order (RowKey: byte order of the escaped names, as `ls` and a glob in
  // the C locale sort). Nothing when the listing is not cached complete.
  // The entries may be stale: a reader of their blobs pins the version.
  std::optional<FilesAhead> FilesAfter(uint64_t ino, size_t max);

  // Data path support.
  Result<FileState> GetFile(uint64_t ino, bool fresh = false);
  // Records a committed blob: size, mtime, blob ETag (and the block size of
  // its layout when not 0) merged into the entry. `prev_etag`: the blob ETag
  // the commit replaced ("" for a new blob). When another writer's newer
  // version is committed already, the entry is left to it (and returned).
  // `sent_to`: the blob the data was written to; a deferred create renamed
  // since (its pending entry names another blob) is not inserted: kStale.
  Result<Attr> CommitFile(uint64_t ino, uint64_t size, int64_t mtime_ns,
                          const std::string& blob_etag, const std::string& prev_etag,
                          uint64_t block_size = 0, const std::string& sent_to = "");
  void Pin(uint64_t ino) { inodes_.Pin(ino); }
  // This mount removed the inode's name (unlink, a rename over it, a pending
  // create abandoned): not a change another mount made.
  // Whether this mount removed the inode's last name (unlink, rename over
  // it). Waits for such a removal in flight (RemovalInFlight): its entry can
  // be gone from the table before the removal is recorded.
  bool RemovedHere(uint64_t ino) const;
  void Unpin(uint64_t ino);

  // Told of every blob this mount's renames copy (on the renaming thread),
  // so cached data follows the file. Set before serving (not synchronized).
  void OnBlobMoved(std::function<void(const BlobMove&)> listener) {
    blob_moved_ = std::move(listener);
  }

  // Other tools' changes (fs/admin/foreign_view.h): asked about a directory
  // on every listing and lookup in it and before the first open of a file in
  // it, with how long the caller may wait (DirectoryCheck). It returns true
  // when it changed the directory's entries in the table before returning;
  // the cached copy of the directory is dropped then. Set before serving
  // (not synchronized).
  enum class DirectoryCheck {
    kBackground,    // a lookup that found its name: never waits
    kFirstListing,  // a listing: waits the first time, else in the background
    kWait,          // a lookup that found nothing, an open: waits when due
  };
  void OnDirectoryRead(std::function<bool(const std::string& dir_path, DirectoryCheck how)> check) {
    foreign_check_ = std::move(check);
  }

  // Drops the cached copy of a directory whose entries another writer
  // changed (an event applied): the next read asks the table.
  void DropCached(const std::string& dir_path);
  // OnDirectoryRead's check of the directory holding `ino` (a file about to
  // be opened). True when it changed that directory.
  bool CheckDirectoryOf(uint64_t ino);

  const NamespaceOptions& options() const { return options_; }
  // Attributes as shown to the kernel (uid/gid/umask overrides applied).
  Attr Present(Attr attr) const;
  // The path of an inode the kernel knows, from memory only (for log lines).
  std::optional<std::string> KnownPath(uint64_t ino) const { return inodes_.PathOf(ino); }
  // The kernel's lookup counts (InodeTable::Lookups), for the simulation.
  std::vector<std::pair<uint64_t, uint64_t>> KernelLookups() const { return inodes_.Lookups(); }
  std::atomic<uint64_t> table_requests{0};

  // Held by a pipeline commit (commit=async) of a file in `dir_path` while
  // it runs on this thread: its entry change is on its way to CommitGrouped.
  // A ticket holder that arrives there waits for the directory's other
  // tickets still uploading (at most kGroupLingerMs) so they share one
  // transaction. Callers without a ticket (close, fsync) never wait.
  // `on_arrive` runs once, on this thread, when the upload is over (the
  // pipeline's upload slot is free again while the entry change waits).
  class GroupTicket {
   public:
    GroupTicket(Namespace& ns, std::string dir_path, std::function<void()> on_arrive = {});
    ~GroupTicket();
    GroupTicket(const GroupTicket&) = delete;
    GroupTicket& operator=(const GroupTicket&) = delete;

   private:
    friend class Namespace;
    void ArriveLocked();  // once: this commit reached CommitGrouped, or ended
    Namespace& ns_;
    std::string dir_path_;
    std::function<void()> on_arrive_;
    bool arrived_ = false;
  };
  static constexpr int64_t kGroupLingerMs = 100;

 private:
  struct Located {
    std::string parent_path;
    std::string name;
    std::string path;
  };
  // kAuth (EACCES) when options_.can_delete is false.
  Status CheckCanDelete(const char* op) const;
  // `new_name`: the name is being created (CheckNewName), else CheckName.
  Result<Located> Locate(uint64_t parent, const std::string& name, bool new_name = false);
  // What a located name holds now, hard links resolved (cached within the TTL).
  Result<Attr> NamedAttr(const Located& loc);
  Result<std::string> PathOf(uint64_t ino);
  // `fresh` skips the cache (before a conditional write that must not be stale).
  // `pending_too`: this mount's pending creates count (as every lookup
  // sees them); false: only what the table holds.
  Result<Entity> FetchEntry(const std::string& dir_path, const std::string& name, bool fresh,
                            bool pending_too = true);
  // FetchEntry without this mount's deferred directory attribute changes.
  Result<Entity> FetchStoredEntry(const std::string& dir_path, const std::string& name,
                                  bool fresh, bool pending_too);
  // The entity holding the inode's attributes: its name's entry, or its
  // inode record when the name is a hard link (fs/namespace/hard_links.h).
  Result<Entity> FetchEntryOf(uint64_t ino, std::string* path, bool fresh);
  // The name's entry itself (never the record).
  Result<Entity> FetchNameOf(uint64_t ino, std::string* path, bool fresh);
  // Hard links (fs/namespace/namespace_links.cc).
  Result<Entity> FetchInode(uint64_t ino, bool fresh);
  // A point read from the table; the row or its absence is cached unless this
  // mount changed the partition meanwhile (MetaCache::ReadTicket).
  Result<Entity> GetRow(const std::string& pk, const std::string& rk);
  Result<Entity> ResolveLink(const Entity& entry, bool fresh);
  Result<Entity> FindLinkName(uint64_t ino, std::string* path);
  Result<Entity> LiveLinkName(const Entity& record, const std::string& except, std::string* path);
  Result<Entity> PutInode(const Entity& record, const Condition& cond);
  Result<Entity> ChangeInode(uint64_t ino, const std::function<Status(Entity*)>& change);
  Status MoveLinkBlob(Entity* record, const std::string& to_path);
  Status KeepLinkBlob(Entity* record, const std::string& leaving);
  Result<FileState> UnlinkLinked(const Located& loc, uint64_t ino);
  Result<FileState> LastLinkGone(const Entity& record, const std::string& path);
  // After a rename of a linked name / over one (the table moved).
  Status LinkNameMoved(uint64_t ino, const std::string& from, const std::string& to);
  Status LinkNameReplaced(uint64_t ino, const std::string& path);
  // After MoveChildren wrote `rows` of `from` into `to`: each linked name's
  // record follows (its paths; its blob when named by the old path).
  Status LinkNamesMoved(const std::string& from, const std::string& to,
                        const std::vector<Entity>& rows);
  void NoteLinked(uint64_t ino);
  bool KnownLinked(uint64_t ino);
  Result<std::vector<Entity>> FetchListing(const std::string& dir_path, size_t max_pages = 0);
  // `ticket`: the metadata cache's ReadTicket taken before `dot` was read.
  bool ConfirmedBy(const std::string& pk, DirectoryGeneration* gen, const Entity& dot,
                   uint64_t ticket);
  bool ShouldList(const std::string& pk);
  void ListedOrTooLarge(const std::string& pk, bool too_large);
  // The "." row from the table; *ticket: the metadata cache's ReadTicket
  // taken before the request (for storing what it read).
  Result<Entity> FetchDot(const std::string& pk, uint64_t* ticket = nullptr);
  // FetchDot to revalidate a cached copy: NoAnswer (offline.h) within
  // offline_after_ms means "keep the cached copy".
  Result<Entity> RevalidateDot(const std::string& pk, uint64_t* ticket);
  Result<Entity> FetchRootDot(bool fresh);
  // What a directory's own partition says about it: the time its names last
  // changed ("touched" on its "." row) and how many subdirectories it holds.
  struct DirSummary {
    int64_t touched = 0;
    uint64_t subdirs = 0;
    // The times move when newer than the last change of the directory's own
    // entry (a later utimens wins).
    Attr ApplyTo(Attr a) const {
      if (touched > a.ctime_ns) a.mtime_ns = a.ctime_ns = touched;
      a.nlink = static_cast<uint32_t>(2 + subdirs);
      return a;
    }
  };
  // On the cached "." row only (never written to the table): its subdirectories.
  static constexpr const char* kSubdirsProperty = "cachedSubdirs";
  // Within the TTL; with `fresh`, of any age (offline), *fresh telling which.
  std::optional<DirSummary> CachedDirSummary(const std::string& pk, bool* fresh = nullptr);
  void CacheDot(Entity dot, uint64_t ticket);
  Result<DirSummary> FetchDirSummary(const std::string& path);
  Result<DirSummary> QueryDirSummary(const std::string& path);
  // A directory's attributes as shown: its entry's, with times and st_nlink
  // from its partition (FetchDirSummary). Other kinds unchanged.
  Result<Attr> WithDirectoryAttrs(const std::string& path, Attr attr);
  // `names_change`: the transaction creates, removes or renames names of the
  // directory, so its mtime moves ("touched"); unset: any insert or delete.
  Result<BatchResult> CommitInDirectory(const std::string& dir_path,
                                        std::vector<TableOperation> ops, BatchError* error,
                                        std::optional<bool> names_change = std::nullopt);
  Result<BatchResult> CommitInDirectoryLocked(const std::string& dir_path,
                                              std::vector<TableOperation> ops, BatchError* error,
                                              std::optional<bool> names_change = std::nullopt);
  // One entry operation that may share its entity group transaction with
  // others of the same directory arriving meanwhile (fs/namespace/namespace_groups.cc):
  // the result and `error` (failed_index 0: this operation) are this
  // operation's alone. Never a change of names (an insert of a new file's
  // entry is one: `names_change`).
  Result<BatchResult> CommitGrouped(const std::string& dir_path, const TableOperation& op,
                                    BatchError* error);
  Result<std::vector<std::string>> Exchange(uint64_t parent, const std::string& name,
                                            uint64_t new_parent, const std::string& new_name);
  // Across two directories (fs/namespace/namespace_xexchange.cc). False: dropped with
  // nothing moved (an entry changed before its claim; decide again).
  Result<bool> ExchangeAcross(const Located& from, const Located& to, const Entity& a,
                              const Entity& b);
  Status ConfirmNotFound(const std::vector<TableOperation>& ops, BatchError* err);
  // `req` applied to an entry. Its ctime moves to now, or with `at_ns` (a
  // change made then and applied later: DeferSetAttr) to the later of its
  // own and that.
  static Status ApplySetAttr(const SetAttrRequest& req, Entity* entity,
                             std::optional<int64_t> at_ns = std::nullopt);
  std::string SyncBlobAttrs(const FileState& st, const SetAttrRequest& req);
  Result<Entity> MergeEntry(uint64_t ino, const std::function<Status(Entity*)>& change);
  // MergeEntry of the root: `after` (its "." row changed) written over `before`.
  Status UpdateRootDot(const Entity& before, Entity* after);
  Result<uint64_t> AllocateIno();
  Status ReserveInoRangeLocked();
  Entity NewEntry(const std::string& dir_path, const std::string& name, const Attr& attr) const;
  Entity DotRow(const std::string& dir_path, uint64_t ino) const;
  Result<Attr> InsertEntry(uint64_t parent, const Located& loc, const Entity& entry);
  Result<std::string> CheckEmpty(const std::string& pk);
  Result<FileState> FileStateOf(const Entity& entry, const std::string& path) const;
  Result<Attr> CreateNode(uint64_t parent, const std::string& name, uint32_t mode, uint64_t rdev,
                          uint32_t uid, uint32_t gid, bool deferred);
  // Inodes whose name this mount removed (fs/namespace/namespace_removed.cc): detached
  // from the inode table; a file's entry as it was is kept while the kernel
  // or an open file holds the inode, so fstat of an unlinked open file
  // answers (st_nlink 0) and fchmod/futimens/fsetxattr change it in memory.
  void Removed(uint64_t ino, const Entity* entry);
  // Held from before the table change that removes `ino`'s last name until
  // Removed() recorded it (or the change failed): a commit or setattr that
  // finds the entry gone meanwhile asks RemovedHere, which waits for it.
  class RemovalInFlight {
   public:
    RemovalInFlight(const Namespace& ns, uint64_t ino);
    ~RemovalInFlight();
    RemovalInFlight(const RemovalInFlight&) = delete;
    RemovalInFlight& operator=(const RemovalInFlight&) = delete;

   private:
    const Namespace& ns_;
    uint64_t ino_;
  };
  void DropRemovedIfGone(uint64_t ino);
  std::optional<Entity> RemovedEntry(uint64_t ino);
  std::optional<Attr> RemovedAttr(uint64_t ino);
  std::optional<Result<Attr>> SetRemovedAttr(uint64_t ino, const SetAttrRequest& req);
  // nullopt when `ino` is not removed; else `change` applied to its kept entry.
  std::optional<Status> ChangeRemoved(uint64_t ino, const std::function<Status(Entity*)>& change);
  // The entry xattrs are read from: a removed inode's kept one, else the table's.
  Result<Entity> XattrEntity(uint64_t ino);
  // Deferred directory attribute changes (fs/namespace/namespace_deferred.cc).
  struct Deferred {
    std::string parent_path;  // where the directory's entry is
    std::string name;
    SetAttrRequest change;  // every change since the last commit, later fields winning
    int64_t ctime_ns = 0;   // of the latest change
    uint64_t generation = 0;
  };
  void OverlayDeferred(Entity* entity);
  Status LandDeferred(uint64_t ino, Deferred* d);
  Result<std::string> FindDirectory(uint64_t ino);
  void RelocateDeferred(uint64_t ino, const std::string& path, Deferred* d);
  // Forgets the change (and its journal row) if still at `generation` (0: any).
  void DropDeferred(uint64_t ino, uint64_t generation = 0);
  // Deferred creates (fs/namespace/namespace_pending.cc).
  Result<Attr> CreateDeferred(uint64_t parent, const Located& loc, const Attr& attr);
  std::optional<Entity> PendingEntry(const std::string& pk, const std::string& rk);
  std::vector<Entity> PendingIn(const std::string& pk);
  bool AnyPendingIn(const std::string& pk);
  // The latest kCreatedProperty of the directory's pending entries (0: none).
  int64_t PendingCreatedIn(const std::string& pk);
  Result<Entity> InsertPending(uint64_t ino, std::unique_lock<std::mutex>& lock);
  void WaitNotInFlight(uint64_t ino, std::unique_lock<std::mutex>& lock);
  // `sent_to` (not empty): kStale unless the pending entry names that blob.
  std::optional<Result<Entity>> ChangePending(uint64_t ino,
                                              const std::function<Status(Entity*)>& change,
                                              bool insert, const std::string& sent_to = "");
  std::optional<FileState> DropPending(const std::string& pk, const std::string& rk,
                                       const std::string& path);
  Status MaterializePending();
  std::optional<Status> RenamePending(const Located& from, uint64_t new_parent,
                                      const Located& to, uint64_t* moved);
  Status ChangeXattrs(uint64_t ino, const std::function<Status(XattrMap*)>& change);
  Status InitTables();
  // The steps of a rename after its intent row exists, each idempotent:
  // blobs copied (a directory: MoveChildren), the target entry put, the
  // source entry deleted, the old blob deleted, the intent deleted. Run by
  // the live rename and, after a crash, by RollForwardIntents. `settled`:
  // the intent row is gone (finished or dropped).
  Status FinishRename(const RenameIntent& intent, std::vector<std::string>* orphaned,
                      bool* settled);
  Status ClaimForRename(const RenameIntent& intent, Entity* src);
  Result<bool> ClaimedByLiveIntent(const Entity& e, bool exchanges_only = false);
  // kConflict (EBUSY) when `e` is claimed by a live exchange: an exchange
  // across directories may hold its other entry in its intent alone, so the
  // name may not be removed, replaced or linked until it is done.
  Status CheckNotExchanging(const Entity& e, const std::string& path);
  Status WriteIntent(RenameIntent* intent);
  // The roll-forward of an exchange (fs/namespace/namespace_exchange.cc).
  Status FinishExchange(const RenameIntent& intent, bool* settled);
  Status FinishExchangeAcross(const RenameIntent& intent, bool* settled);
  Status FinishPendingRenames();  // REQUIRES: rename_mu_
  // A rename decided (its intent written) whose outcome is not known yet:
  // finished later (FinishPendingRenames). REQUIRES: rename_mu_
  void LeaveUnfinished(const RenameIntent& intent);
  // Before a lookup or a create resolves a name: this mount's renames left
  // unfinished by an ambiguous failure are finished first (when no rename
  // runs), so the names under them resolve where the table has them.
  void SettleOwnRenames();  // REQUIRES: rename_mu_ not held by this thread
  // A rename finished after its caller saw it fail: the kernel's inode goes
  // where the table now has it (as Rename does when it succeeds).
  void RepointFinished(const RenameIntent& done);
  bool MayTakeOver(const RenameIntent& intent) const;
  Status MoveChildren(const std::string& from, const std::string& to, uint64_t dir_ino);
  int64_t NowMs() const;
  void BlobMoved(const BlobMove& move) const {
    if (blob_moved_) blob_moved_(move);
  }

  TableStore& table_;
  BlobStore& blobs_;
  MetaCache* cache_;  // may be null: then nothing is cached
  NamespaceOptions options_;
  InodeTable inodes_;

  std::mutex ino_mu_;
  uint64_t next_ino_ = 0;    // GUARDED_BY(ino_mu_)
  uint64_t ino_limit_ = 0;   // GUARDED_BY(ino_mu_)
  uint64_t ino_ranges_ = 0;  // ranges taken; GUARDED_BY(ino_mu_)

  // Serializes changes per directory partition (striped): the "." ETag we
  // expect stays ours between the read and the batch. Lock order: by stripe index.
  static constexpr size_t kStripes = 64;
  std::mutex stripes_[kStripes];
  std::mutex& StripeFor(const std::string& dir_path);
  std::mutex rename_mu_;  // serializes renames (they lock two stripes)
  // Held exclusively by renames (after rename_mu_), shared by
  // SetAttrWithBlob: a blob's metadata never changes under this mount's
  // rename claiming its entry and copying it (a 412 there reads as another
  // mount's rename: ENOENT). Before pending_mu_ and the stripes.
  std::shared_mutex blob_attrs_mu_;
  // This mount's renames whose steps failed after the intent was written
  // (the backend was away): finished before the next rename. GUARDED_BY(rename_mu_)
  std::vector<RenameIntent> pending_renames_;
  std::atomic<bool> unfinished_renames_{false};  // pending_renames_ not empty (a hint)
  // Point lookups per directory whose listing is not cached (ShouldList).
  static constexpr int kListAfterLookups = 8;
  static constexpr size_t kListPageBudget = 16;
  static constexpr int64_t kPointOnlyMs = 10 * 60 * 1000;
  static constexpr size_t kMaxTrackedDirectories = 4096;
  struct DirectoryLookups {
    int misses = 0;
    int64_t point_only_until_ms = 0;  // over kListPageBudget pages: not listed again before
  };
  struct Pending {
    Entity entry;
    std::string dir_path;
    bool in_flight = false;  // its insert is under way (InsertPending)
  };
  std::mutex pending_mu_;  // after rename_mu_, before any stripe; inserts run outside it
  std::condition_variable pending_cv_;   // an insert finished
  std::map<uint64_t, Pending> pending_;  // by inode  GUARDED_BY(pending_mu_)
  // pending_ by (PartitionKey, RowKey): a name, or a directory's pending
  // files, found without a scan (a directory of thousands of pending files
  // made every create and getattr of it linear). Always pending_'s keys.
  using PendingName = std::pair<std::string, std::string>;
  std::map<PendingName, uint64_t> pending_names_;  // GUARDED_BY(pending_mu_)
  // REQUIRES: pending_mu_. The only ways pending_ gains or loses an entry.
  void AddPendingLocked(uint64_t ino, Pending p);
  void ErasePendingLocked(std::map<uint64_t, Pending>::iterator it);
  // REQUIRES: pending_mu_. 0 when no pending entry has that name.
  uint64_t PendingInoLocked(const std::string& pk, const std::string& rk) const;
  template <typename Fn>  // fn(const Pending&) for each pending entry of `pk`
  void ForEachPendingLocked(const std::string& pk, Fn fn) const;
  // Operations waiting to share a transaction, by directory path.
  struct GroupSlot;
  std::mutex groups_mu_;  // after a stripe
  std::map<std::string, std::deque<std::shared_ptr<GroupSlot>>> groups_;  // GUARDED_BY(groups_mu_)
  std::condition_variable groups_cv_;  // a ticket arrived
  std::map<std::string, int> uploading_;  // tickets not arrived, by directory  GUARDED_BY(groups_mu_)
  std::mutex lookups_mu_;
  std::unordered_map<std::string, DirectoryLookups> lookups_;  // GUARDED_BY(lookups_mu_)
  std::mutex removed_mu_;  // before InodeTable's; nothing else is taken while held
  std::map<uint64_t, Entity> removed_;  // by inode; GUARDED_BY(removed_mu_)
  mutable std::mutex removing_mu_;  // nothing else is taken while held
  mutable std::condition_variable removing_cv_;
  mutable std::multiset<uint64_t> removing_;  // RemovalInFlight; GUARDED_BY(removing_mu_)
  std::mutex deferred_mu_;  // nothing else but the cache's is taken while held
  std::map<uint64_t, Deferred> deferred_;  // by inode  GUARDED_BY(deferred_mu_)
  uint64_t deferred_generation_ = 0;       // GUARDED_BY(deferred_mu_)
  std::mutex linked_mu_;
  // Inodes seen with a linked name: when the name this mount knows is gone,
  // the record still answers (another name keeps the file).
  std::unordered_set<uint64_t> linked_inos_;  // GUARDED_BY(linked_mu_)
  std::string mount_id_;  // random, names this instance in the intents it writes
  std::string host_;
  std::function<void(const BlobMove&)> blob_moved_;
  std::function<bool(const std::string&, DirectoryCheck)> foreign_check_;
  // foreign_check_ of `dir_path`: true when it changed the directory.
  bool ForeignChanged(const std::string& dir_path, DirectoryCheck how);
};

}  // namespace stampfs
