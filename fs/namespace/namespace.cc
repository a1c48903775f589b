// Namespace: set-up, reading (lookup, getattr, readdir) and the metadata
// cache protocol of listings and entries. A directory's shown attributes
// live in namespace_dir_attrs.cc, directory transactions and inode
// allocation in namespace_txn.cc, changes in namespace_mutate.cc and
// namespace_rename.cc.
#include "fs/namespace/namespace.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/offline.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

constexpr const char* kFsPartition = "~fs";
constexpr const char* kInoCounterRow = "ino-counter";
constexpr const char* kFormatRow = "format";
constexpr int64_t kFormatVersion = 1;

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsOkOrExists(const Status& s) { return s.ok() || s.Is(Code::kAlreadyExists); }

}  // namespace

Namespace::Namespace(TableStore& table, BlobStore& blobs, MetaCache* cache,
                     NamespaceOptions options)
    : table_(table), blobs_(blobs), cache_(cache), options_(std::move(options)) {
  if (!options_.now_ms) options_.now_ms = SystemNowMs;
  mount_id_ = NewIntentId(NowNs()).substr(21);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  host_ = host;
}

int64_t Namespace::NowMs() const { return options_.now_ms(); }

std::mutex& Namespace::StripeFor(const std::string& dir_path) {
  return stripes_[std::hash<std::string>{}(dir_path) % kStripes];
}

Status Namespace::Init() {
  STAMPFS_RETURN_IF_ERROR(InitTables());
  if (options_.read_only) return Status::Ok();
  auto outcomes = RollForwardIntents(false);
  if (!outcomes.ok()) {
    LogWarning("unfinished renames could not be read: " + outcomes.status().ToString());
  }
  return Status::Ok();
}

Status Namespace::InitTables() {
  const std::string& c = options_.container;
  const std::string& t = options_.table;
  if (!options_.read_only) {
    Status s = blobs_.CreateContainer(c);
    if (!IsOkOrExists(s)) return s;  // the client's message names the container
    s = table_.CreateTable(t);
    if (!IsOkOrExists(s)) return s;
  }
  STAMPFS_RETURN_IF_ERROR(blobs_.GetContainerProperties(c));
  auto root = FetchDot(PartitionKeyForDirectory("/"));
  if (root.ok()) {
    if (cache_) cache_->PutEntry(*root, NowMs()).PermitUnchecked();
    FinishMkdirs();
    return Status::Ok();
  }
  if (!root.status().Is(Code::kNotFound)) return root.status().WithContext("table " + t);
  if (options_.read_only) {
    return Status(Code::kNotFound,
                  "table " + t + " is missing or has no root directory, and a read-only mount " +
                      "cannot create it: run `stampfs import " + c +
                      "` (or one writable mount) with credentials that can write the table, " +
                      "then mount read-only again");
  }
  Entity format{kFsPartition, kFormatRow, {{"version", kFormatVersion}}, {}};
  Entity counter{kFsPartition, kInoCounterRow, {{"next", static_cast<int64_t>(kRootIno + 1)}}, {}};
  for (const Entity& e : {format, counter}) {
    auto r = table_.Insert(t, e);
    if (!r.ok() && !r.status().Is(Code::kAlreadyExists)) return r.status();
  }
  Attr attr;
  attr.ino = kRootIno;
  attr.mode = S_IFDIR | 0755;
  attr.uid = getuid();
  attr.gid = getgid();
  attr.mtime_ns = attr.ctime_ns = attr.atime_ns = NowNs();
  Entity dot{PartitionKeyForDirectory("/"), kDotRowKey, {}, {}};
  AttrToEntity(attr, &dot);
  auto r = table_.Insert(t, dot);
  table_requests += 3;
  if (!r.ok() && !r.status().Is(Code::kAlreadyExists)) return r.status();
  if (r.ok() && cache_) {  // as read back (the root's attributes answer offline too)
    dot.etag = *r;
    cache_->PutEntry(dot, NowMs()).PermitUnchecked();
  }
  return Status::Ok();
}

Attr Namespace::Present(Attr attr) const {
  if (options_.force_uid) attr.uid = *options_.force_uid;
  if (options_.force_gid) attr.gid = *options_.force_gid;
  attr.mode &= ~(options_.umask & 07777);
  return attr;
}

Status Namespace::CheckCanDelete(const char* op) const {
  if (options_.can_delete) return Status::Ok();
  return Status(Code::kAuth, std::string(op) + " refused: the credentials grant no delete " +
                                 "permission (a SAS without 'd'), and it deletes blobs or rows");
}

Result<std::string> Namespace::PathOf(uint64_t ino) {
  auto p = inodes_.PathOf(ino);
  if (!p) return Status(Code::kNotFound, "inode " + std::to_string(ino) + " is not known");
  return *p;
}

Result<Namespace::Located> Namespace::Locate(uint64_t parent, const std::string& name,
                                             bool new_name) {
  STAMPFS_RETURN_IF_ERROR(new_name ? CheckNewName(name) : CheckName(name));
  auto dir = PathOf(parent);
  STAMPFS_RETURN_IF_ERROR(dir);
  Located loc{*dir, name, JoinPath(*dir, name)};
  return loc;
}

Result<Entity> Namespace::FetchDot(const std::string& pk, uint64_t* ticket) {
  if (ticket && cache_) *ticket = cache_->ReadTicket(pk);
  table_requests++;
  return table_.Get(options_.table, pk, kDotRowKey);
}

Result<Entity> Namespace::RevalidateDot(const std::string& pk, uint64_t* ticket) {
  RevalidationDeadline deadline(std::chrono::milliseconds(options_.offline_after_ms));
  auto dot = FetchDot(pk, ticket);
  if (!dot.ok()) return deadline.Outcome(dot.status());
  return dot;
}

namespace {
bool IsDirEntity(const Entity& e) { return (e.GetInt64("mode") & S_IFMT) == S_IFDIR; }
}  // namespace

// Listing protocol: the "." ETag recorded with a listing is read no later
// than its first page: from the first page itself (the partition query
// returns the "." row too; one request saved), else by a Get before the
// pages. A change made while the pages are read changes "." after the ETag
// we record, so the next revalidation sees a different ETag and lists again:
// the cache never claims a listing exact for an ETag it does not match.
//
// Holds the directory's stripe, so a commit of this mount in the directory
// waits for the listing; what is read is stored under a ticket taken first
// (MetaCache::ReadTicket), so no other change of this mount is overwritten.
// `max_pages` (0: no limit): past it, the entries read are cached one by one
// and kTooLarge is returned.
Result<std::vector<Entity>> Namespace::FetchListing(const std::string& dir_path, size_t max_pages) {
  const std::string pk = PartitionKeyForDirectory(dir_path);
  std::lock_guard<std::mutex> lock(StripeFor(dir_path));
  const uint64_t ticket = cache_ ? cache_->ReadTicket(pk) : 0;
  std::optional<Entity> dot;
  if (cache_) {
    auto gen = cache_->GetGeneration(pk);
    if (gen && gen->complete) {
      bool fresh = NowMs() - gen->validated_ms < options_.ttl_ms;
      if (!fresh) {
        auto current = RevalidateDot(pk, nullptr);
        if (ServeStale(true, current.status())) {
          fresh = true;
        } else {
          STAMPFS_RETURN_IF_ERROR(current);
          dot = *current;
          fresh = ConfirmedBy(pk, &*gen, *dot, ticket);
        }
      }
      if (fresh) {
        std::vector<Entity> out;
        for (auto& ce : cache_->ListEntries(pk)) {
          if (ce.entity.row_key != kDotRowKey) out.push_back(std::move(ce.entity));
        }
        return out;
      }
    }
  }
  QueryOptions q;
  q.filter = FilterPartition(pk);
  std::vector<Entity> entries;
  for (;;) {
    entries.clear();
    bool late_dot = false;  // "." came after the first page: too late to record
    std::string npk, nrk;
    size_t pages = 0;
    do {
      if (max_pages > 0 && pages == max_pages) {
        if (cache_) {
          for (const Entity& e : entries) cache_->PutFetched(e, NowMs(), ticket).PermitUnchecked();
        }
        return Status(Code::kTooLarge,
                      dir_path + ": over " + std::to_string(max_pages) + " pages of entries");
      }
      table_requests++;
      auto page = table_.QueryPage(options_.table, q, npk, nrk);
      STAMPFS_RETURN_IF_ERROR(page);
      for (auto& e : page->entities) {
        if (e.row_key != kDotRowKey) {
          entries.push_back(std::move(e));
        } else if (!dot) {
          if (pages == 0) dot = std::move(e);
          late_dot = pages > 0;
        }
      }
      ++pages;
      npk = page->next_partition_key;
      nrk = page->next_row_key;
    } while (!npk.empty() || !nrk.empty());
    if (dot) break;
    if (!late_dot) {
      if (cache_) cache_->DropPartition(pk).PermitUnchecked();
      return Status(Code::kNotFound, "directory " + dir_path + " is gone");
    }
    // Over a page of names sort before ".": read it first, then list again.
    auto current = FetchDot(pk);
    STAMPFS_RETURN_IF_ERROR(current);
    dot = *current;
  }
  if (cache_) {
    dot->properties[kSubdirsProperty] =
        static_cast<int64_t>(std::count_if(entries.begin(), entries.end(), IsDirEntity));
    entries.push_back(*dot);  // cached with the listing: the directory's times and link count
    cache_->PutListing(pk, entries, dot->etag, NowMs(), ticket).PermitUnchecked();
    entries.pop_back();
  }
  return entries;
}

Status Namespace::ListRoot() {
  if (!cache_) return Status::Ok();
  auto listed = FetchListing("/", 1);
  if (!listed.ok() && !listed.status().Is(Code::kTooLarge)) return listed.status();
  return Status::Ok();
}

// A "." row just read against a complete listing's generation: the same
// ETag confirms every cached entry of the directory for another TTL.
bool Namespace::ConfirmedBy(const std::string& pk, DirectoryGeneration* gen, const Entity& dot,
                            uint64_t ticket) {
  if (dot.etag != gen->dot_etag) return false;
  gen->validated_ms = NowMs();
  cache_->ConfirmGeneration(pk, *gen, ticket).PermitUnchecked();
  return true;
}

// Names looked up one by one in a directory whose listing is not cached:
// from the kListAfterLookups-th point query on, the directory is listed
// instead (up to kListPageBudget pages; a bigger one is left to point
// queries for a while), so stat of every name costs a listing, not a query
// per name.
bool Namespace::ShouldList(const std::string& pk) {
  std::lock_guard<std::mutex> lock(lookups_mu_);
  if (lookups_.size() > kMaxTrackedDirectories) lookups_.clear();
  DirectoryLookups& d = lookups_[pk];
  if (NowMs() < d.point_only_until_ms) return false;
  return ++d.misses >= kListAfterLookups;
}

void Namespace::ListedOrTooLarge(const std::string& pk, bool too_large) {
  std::lock_guard<std::mutex> lock(lookups_mu_);
  DirectoryLookups& d = lookups_[pk];
  d.misses = 0;
  if (too_large) d.point_only_until_ms = NowMs() + kPointOnlyMs;
}

Result<Entity> Namespace::FetchEntry(const std::string& dir_path, const std::string& name,
                                     bool fresh, bool pending_too) {
  auto e = FetchStoredEntry(dir_path, name, fresh, pending_too);
  if (e.ok()) OverlayDeferred(&*e);
  return e;
}

Result<Entity> Namespace::FetchStoredEntry(const std::string& dir_path, const std::string& name,
                                           bool fresh, bool pending_too) {
  const std::string pk = PartitionKeyForDirectory(dir_path);
  const std::string rk = RowKeyForName(name);
  if (pending_too) {
    if (auto pending = PendingEntry(pk, rk)) return *pending;
  }
  if (cache_ && !fresh) {
    auto gen = cache_->GetGeneration(pk);
    auto ce = cache_->GetEntry(pk, rk);
    if (gen && gen->complete && NowMs() - gen->validated_ms >= options_.ttl_ms) {
      // One request revalidates every entry of the directory. When "."
      // changed, names go back to point queries (and a listing once enough
      // are asked for) rather than a relisting per lookup.
      uint64_t ticket = 0;
      auto dot = RevalidateDot(pk, &ticket);
      if (dot.status().Is(Code::kNotFound)) {
        cache_->DropPartition(pk).PermitUnchecked();
        return Status(Code::kNotFound, JoinPath(dir_path, name));
      }
      if (ServeStale(true, dot.status())) {
        // the cached listing answers, stale
      } else if (!dot.ok()) {
        return dot.status();
      } else if (!ConfirmedBy(pk, &*gen, *dot, ticket)) {
        cache_->InvalidateListing(pk).PermitUnchecked();
        gen.reset();
        ce.reset();
      }
    }
    if (gen && gen->complete) {
      if (!ce) return Status(Code::kNotFound, JoinPath(dir_path, name));
      return ce->entity;
    }
    if (ce && NowMs() - ce->fetched_ms < options_.ttl_ms) return ce->entity;
    // A stale entry is kept when the service gives no answer (offline.h).
    auto offline = [&](const Status& s) { return ServeStale(ce.has_value(), s); };
    if (ShouldList(pk)) {
      auto listed = FetchListing(dir_path, kListPageBudget);
      ListedOrTooLarge(pk, listed.status().Is(Code::kTooLarge));
      if (listed.ok()) {
        ce = cache_->GetEntry(pk, rk);
        if (!ce) return Status(Code::kNotFound, JoinPath(dir_path, name));
        return ce->entity;
      }
      if (listed.status().Is(Code::kNotFound)) {
        return Status(Code::kNotFound, JoinPath(dir_path, name));
      }
      if (offline(listed.status())) return ce->entity;
      if (!listed.status().Is(Code::kTooLarge)) return listed.status();
    }
    std::optional<RevalidationDeadline> deadline;  // only to revalidate a cached entry
    if (ce) deadline.emplace(std::chrono::milliseconds(options_.offline_after_ms));
    Result<Entity> r = GetRow(pk, rk);
    if (!r.ok() && deadline) r = deadline->Outcome(r.status());
    deadline.reset();
    if (r.status().Is(Code::kNotFound)) return Status(Code::kNotFound, JoinPath(dir_path, name));
    if (!r.ok() && offline(r.status())) return ce->entity;
    return r;
  }
  auto r = GetRow(pk, rk);
  if (r.status().Is(Code::kNotFound)) return Status(Code::kNotFound, JoinPath(dir_path, name));
  return r;
}

Result<Entity> Namespace::GetRow(const std::string& pk, const std::string& rk) {
  const uint64_t ticket = cache_ ? cache_->ReadTicket(pk) : 0;
  table_requests++;
  auto r = table_.Get(options_.table, pk, rk);
  if (cache_) {
    if (r.ok()) cache_->PutFetched(*r, NowMs(), ticket).PermitUnchecked();
    if (r.status().Is(Code::kNotFound)) cache_->EraseFetched(pk, rk, ticket).PermitUnchecked();
  }
  return r;
}

// The root's attributes are its "." row: cached like an entry (fresh for
// the TTL, or while the root's complete listing is), and a read that finds
// the listing's "." ETag unchanged revalidates the listing too.
Result<Entity> Namespace::FetchRootDot(bool fresh) {
  const std::string pk = PartitionKeyForDirectory("/");
  std::optional<DirectoryGeneration> gen;
  if (cache_) gen = cache_->GetGeneration(pk);
  std::optional<Entity> cached;
  if (cache_ && !fresh) {
    auto ce = cache_->GetEntry(pk, kDotRowKey);
    const bool listed = gen && gen->complete && NowMs() - gen->validated_ms < options_.ttl_ms;
    if (ce && ce->entity.properties.count("ino")) {
      if (listed || NowMs() - ce->fetched_ms < options_.ttl_ms) return ce->entity;
      cached = ce->entity;
    }
  }
  uint64_t ticket = 0;
  auto dot = cached ? RevalidateDot(pk, &ticket) : FetchDot(pk, &ticket);
  if (ServeStale(cached.has_value(), dot.status())) return *cached;
  STAMPFS_RETURN_IF_ERROR(dot);
  if (cache_) {
    CacheDot(*dot, ticket);
    if (gen && gen->complete && !ConfirmedBy(pk, &*gen, *dot, ticket)) {
      cache_->InvalidateListing(pk).PermitUnchecked();
    }
  }
  return dot;
}

Result<Entity> Namespace::FetchEntryOf(uint64_t ino, std::string* path, bool fresh) {
  auto e = FetchNameOf(ino, path, fresh);
  if (e.ok()) return ResolveLink(*e, fresh);
  if (e.status().Is(Code::kNotFound) && KnownLinked(ino)) {
    // The name this mount knew went; another name may keep the file.
    auto rec = FetchInode(ino, fresh);
    if (rec.ok() && rec->GetInt64("nlink", 1) > 0) return rec;
  }
  return e;
}

Result<Entity> Namespace::FetchNameOf(uint64_t ino, std::string* path, bool fresh) {
  auto p = PathOf(ino);
  STAMPFS_RETURN_IF_ERROR(p);
  if (path) *path = *p;
  if (*p == "/") return FetchRootDot(fresh);
  auto e = FetchEntry(ParentPath(*p), BaseName(*p), fresh);
  // Another mount replaced or removed the name: this inode no longer has it.
  if (e.ok() && static_cast<uint64_t>(e->GetInt64("ino")) != ino) {
    return Status(Code::kNotFound, *p + " now names another file");
  }
  return e;
}

Result<Attr> Namespace::NamedAttr(const Located& loc) {
  auto named = FetchEntry(loc.parent_path, loc.name, false);
  STAMPFS_RETURN_IF_ERROR(named);
  auto e = ResolveLink(*named, false);
  STAMPFS_RETURN_IF_ERROR(e);
  return AttrFromEntity(*e);
}

Result<Attr> Namespace::Lookup(uint64_t parent, const std::string& name) {
  SettleOwnRenames();
  auto loc = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto attr = NamedAttr(*loc);
  if (attr.ok()) {
    ForeignChanged(loc->parent_path, DirectoryCheck::kBackground);
  } else if (attr.status().Is(Code::kNotFound) &&
             ForeignChanged(loc->parent_path, DirectoryCheck::kWait)) {
    attr = NamedAttr(*loc);
  }
  STAMPFS_RETURN_IF_ERROR(attr);
  if (RemovedHere(attr->ino)) {
    // Read before this mount's unlink or rename over the name finished (the
    // kernel revalidates a name without the directory's lock): what the
    // name holds now, never the removed inode under it again.
    auto e = FetchEntry(loc->parent_path, name, true);
    STAMPFS_RETURN_IF_ERROR(e);
    attr = AttrFromEntity(*e);
    STAMPFS_RETURN_IF_ERROR(attr);
    if (RemovedHere(attr->ino)) return Status(Code::kNotFound, loc->path + " was removed");
  }
  inodes_.Remember(attr->ino, parent, name, attr->IsDir());
  return WithDirectoryAttrs(loc->path, *attr);
}

Result<Attr> Namespace::Peek(uint64_t parent, const std::string& name) {
  auto loc = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(loc);
  return NamedAttr(*loc);
}

void Namespace::Remember(uint64_t parent, const DirEntry& entry) {
  inodes_.Remember(entry.attr.ino, parent, entry.name, entry.attr.IsDir());
}

void Namespace::Forget(uint64_t ino, uint64_t nlookup) {
  inodes_.Forget(ino, nlookup);
  DropRemovedIfGone(ino);
}

Result<Attr> Namespace::GetAttr(uint64_t ino) {
  if (auto removed = RemovedAttr(ino)) return *removed;
  std::string path;
  auto e = FetchEntryOf(ino, &path, false);
  STAMPFS_RETURN_IF_ERROR(e);
  auto attr = AttrFromEntity(*e);
  STAMPFS_RETURN_IF_ERROR(attr);
  return WithDirectoryAttrs(path, *attr);
}

void Namespace::DropCached(const std::string& dir_path) {
  if (cache_) cache_->DropPartition(PartitionKeyForDirectory(dir_path)).PermitUnchecked();
}

bool Namespace::ForeignChanged(const std::string& dir_path, DirectoryCheck how) {
  if (!foreign_check_ || !foreign_check_(dir_path, how)) return false;
  DropCached(dir_path);
  return true;
}

bool Namespace::CheckDirectoryOf(uint64_t ino) {
  if (!foreign_check_) return false;
  auto path = inodes_.PathOf(ino);
  return path && *path != "/" && ForeignChanged(ParentPath(*path), DirectoryCheck::kWait);
}

Result<std::vector<DirEntry>> Namespace::ReadDir(uint64_t ino) {
  auto path = PathOf(ino);
  STAMPFS_RETURN_IF_ERROR(path);
  ForeignChanged(*path, DirectoryCheck::kFirstListing);
  auto entities = FetchListing(*path);
  STAMPFS_RETURN_IF_ERROR(entities);
  std::vector<Entity> pending = PendingIn(PartitionKeyForDirectory(*path));
  if (!pending.empty()) {
    // A name the table already has (another mount's) shows once: the table's.
    std::unordered_set<std::string> listed;
    for (const Entity& t : *entities) listed.insert(t.row_key);
    for (Entity& e : pending) {
      if (!listed.count(e.row_key)) entities->push_back(std::move(e));
    }
  }
  std::vector<DirEntry> out;
  out.reserve(entities->size());
  for (Entity& e : *entities) {
    OverlayDeferred(&e);
    auto name = NameOfEntry(e);
    auto attr = AttrFromEntity(e);
    if (!name.ok() || !attr.ok()) {  // not ours (fsck reports it)
      LogDebug("readdir " + *path + ": skipping row " + e.row_key + ": " +
               (name.ok() ? attr.status() : name.status()).ToString());
      continue;
    }
    DirEntry entry{*name, *attr};
    // A hard link's attributes are in its inode record: left to lookup.
    if (IsLinkName(e)) entry.attr_complete = false;
    if (attr->IsDir()) {
      // Only what is cached: a subdirectory not known yet is left to lookup.
      auto summary = CachedDirSummary(PartitionKeyForDirectory(JoinPath(*path, *name)));
      entry.attr_complete = summary.has_value();
      if (summary) entry.attr = summary->ApplyTo(entry.attr);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<FilesAhead> Namespace::FilesAfter(uint64_t ino, size_t max) {
  if (cache_ == nullptr || max == 0) return std::nullopt;
  auto path = inodes_.PathOf(ino);
  if (!path || *path == "/") return std::nullopt;
  FilesAhead out;
  out.dir = ParentPath(*path);
  const std::string pk = PartitionKeyForDirectory(out.dir);
  auto gen = cache_->GetGeneration(pk);
  if (!gen || !gen->complete) return std::nullopt;
  std::string after = RowKeyForName(BaseName(*path));
  // Subdirectories and other entries in between are passed over, a few pages at most.
  for (int page = 0; page < 4 && out.files.size() < max; ++page) {
    auto rows = cache_->ListEntriesAfter(pk, after, max);
    for (const CachedEntity& c : rows) {
      after = c.entity.row_key;
      if (after == kDotRowKey || EntryType(c.entity) != S_IFREG) continue;
      auto name = NameOfEntry(c.entity);
      if (!name.ok()) continue;
      auto st = FileStateOf(c.entity, JoinPath(out.dir, *name));
      if (!st.ok() || st->blob.empty() || st->blob_etag.empty()) continue;
      out.files.push_back(std::move(*st));
      if (out.files.size() >= max) break;
    }
    if (rows.size() < max) break;
  }
  return out;
}

}  // namespace stampfs
