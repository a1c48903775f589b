// Namespace: reading (lookup, getattr, readdir), the metadata cache protocol,
// directory transactions and inode allocation. Changes live in
// namespace_mutate.cc and namespace_rename.cc.
#include "fs/namespace/namespace.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "fs/namespace/hard_links.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
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
    if (!IsOkOrExists(s)) return s.WithContext("create container " + c);
    s = table_.CreateTable(t);
    if (!IsOkOrExists(s)) return s.WithContext("create table " + t);
  }
  STAMPFS_RETURN_IF_ERROR(blobs_.GetContainerProperties(c).WithContext("container " + c));
  auto root = FetchDot(PartitionKeyForDirectory("/"));
  if (root.ok()) {
    if (cache_) cache_->PutEntry(*root, NowMs()).PermitUnchecked();
    return Status::Ok();
  }
  if (!root.status().Is(Code::kNotFound)) return root.status().WithContext("table " + t);
  if (options_.read_only) {
    return Status(Code::kNotFound,
                  "table " + t + " has no root directory and the mount is read-only");
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
  if (new_name) STAMPFS_RETURN_IF_ERROR(CheckBlobPath(loc.path));
  return loc;
}

Result<Entity> Namespace::FetchDot(const std::string& pk) {
  table_requests++;
  return table_.Get(options_.table, pk, kDotRowKey);
}

// A directory's times and link count come from its own partition, never
// from its entry alone, so stat answers the same whether or not the
// directory was listed: mtime/ctime are the "touched" stamp of its "." row
// (written only by transactions that create, remove or rename names in it)
// when newer than the last change of its entry (a later utimens wins);
// st_nlink is 2 + the subdirectory entries of its partition. The count is
// derived, never stored: from a complete cached listing (kept exact by this
// mount's transactions, revalidated by the "." ETag like the listing), else
// one query of the "." row and the subdirectory entries (fresh for the TTL).
namespace {
constexpr const char* kSubdirsFilter =
    " and (RowKey eq '.' or (mode ge 16384L and mode le 20479L))";  // S_IFDIR | 0..07777
bool IsDirEntity(const Entity& e) { return (e.GetInt64("mode") & S_IFMT) == S_IFDIR; }
}  // namespace

std::optional<Namespace::DirSummary> Namespace::CachedDirSummary(const std::string& pk) {
  if (!cache_) return std::nullopt;
  auto dot = cache_->GetEntry(pk, kDotRowKey);
  if (!dot || !dot->entity.Has(kSubdirsProperty)) return std::nullopt;
  auto gen = cache_->GetGeneration(pk);
  const bool listed = gen && gen->complete && gen->dot_etag == dot->entity.etag &&
                      NowMs() - gen->validated_ms < options_.ttl_ms;
  if (!listed && NowMs() - dot->fetched_ms >= options_.ttl_ms) return std::nullopt;
  DirSummary s;
  s.touched = dot->entity.GetInt64("touched");
  s.subdirs = static_cast<uint64_t>(dot->entity.GetInt64(kSubdirsProperty));
  return s;
}

// Caches a "." row just read, keeping the subdirectory count derived for
// the same ETag (nothing in the partition changed since).
void Namespace::CacheDot(Entity dot) {
  if (!cache_) return;
  auto old = cache_->GetEntry(dot.partition_key, kDotRowKey);
  if (old && old->entity.etag == dot.etag && old->entity.Has(kSubdirsProperty)) {
    dot.properties[kSubdirsProperty] = old->entity.properties.at(kSubdirsProperty);
  }
  cache_->PutEntry(dot, NowMs()).PermitUnchecked();
}

Result<Namespace::DirSummary> Namespace::FetchDirSummary(const std::string& path) {
  const std::string pk = PartitionKeyForDirectory(path);
  if (auto s = CachedDirSummary(pk)) return *s;
  if (!cache_) return QueryDirSummary(path);
  auto gen = cache_->GetGeneration(pk);
  if (gen && gen->complete) {
    // One "." read revalidates a stale listing and the count with it.
    auto dot = FetchDot(pk);
    STAMPFS_RETURN_IF_ERROR(dot);
    if (ConfirmedBy(pk, &*gen, *dot)) {
      CacheDot(*dot);
      if (auto s = CachedDirSummary(pk)) return *s;
    } else {
      cache_->InvalidateListing(pk).PermitUnchecked();
    }
  }
  bool point_only;
  {
    std::lock_guard<std::mutex> lock(lookups_mu_);
    auto it = lookups_.find(pk);
    point_only = it != lookups_.end() && NowMs() < it->second.point_only_until_ms;
  }
  if (!point_only) {
    // A directory is usually listed right after its stat (ls, find, tar):
    // the listing serves both.
    auto listed = FetchListing(path, kListPageBudget);
    const bool too_large = listed.status().Is(Code::kTooLarge);
    ListedOrTooLarge(pk, too_large);
    if (listed.ok()) {
      if (auto s = CachedDirSummary(pk)) return *s;
    } else if (!too_large) {
      return listed.status();
    }
  }
  return QueryDirSummary(path);
}

// The "." row and the subdirectory entries only: one page for most directories.
Result<Namespace::DirSummary> Namespace::QueryDirSummary(const std::string& path) {
  const std::string pk = PartitionKeyForDirectory(path);
  QueryOptions q;
  q.filter = FilterPartition(pk) + kSubdirsFilter;
  std::optional<Entity> dot;
  DirSummary s;
  std::string npk, nrk;
  do {
    table_requests++;
    auto page = table_.QueryPage(options_.table, q, npk, nrk);
    STAMPFS_RETURN_IF_ERROR(page);
    for (Entity& e : page->entities) {
      if (e.row_key == kDotRowKey) {
        dot = std::move(e);
      } else {
        s.subdirs++;
      }
    }
    npk = page->next_partition_key;
    nrk = page->next_row_key;
  } while (!npk.empty() || !nrk.empty());
  if (!dot) return Status(Code::kNotFound, "directory " + path + " is gone");
  s.touched = dot->GetInt64("touched");
  if (cache_) {
    dot->properties[kSubdirsProperty] = static_cast<int64_t>(s.subdirs);
    cache_->PutEntry(*dot, NowMs()).PermitUnchecked();
  }
  return s;
}

Result<Attr> Namespace::WithDirectoryAttrs(const std::string& path, Attr attr) {
  if (!attr.IsDir()) return attr;
  auto s = FetchDirSummary(path);
  // No "." row: an unfinished mkdir or rmdir, or a directory another mount
  // is renaming away; its entry is all there is.
  if (s.status().Is(Code::kNotFound)) return attr;
  STAMPFS_RETURN_IF_ERROR(s);
  DirSummary summary = *s;
  // This mount's files created here and not committed yet (commit=async)
  // count as created: their commit stamps "touched" with the same time.
  summary.touched = std::max(summary.touched, PendingCreatedIn(PartitionKeyForDirectory(path)));
  return summary.ApplyTo(attr);
}

// Listing protocol: the "." ETag recorded with a listing is read no later
// than its first page: from the first page itself (the partition query
// returns the "." row too; one request saved), else by a Get before the
// pages. A change made while the pages are read changes "." after the ETag
// we record, so the next revalidation sees a different ETag and lists again:
// the cache never claims a listing exact for an ETag it does not match.
//
// Holds the directory's stripe: a listing read before a concurrent commit in
// this mount must not overwrite the newer state that commit cached.
// `max_pages` (0: no limit): past it, the entries read are cached one by one
// and kTooLarge is returned.
Result<std::vector<Entity>> Namespace::FetchListing(const std::string& dir_path, size_t max_pages) {
  const std::string pk = PartitionKeyForDirectory(dir_path);
  std::lock_guard<std::mutex> lock(StripeFor(dir_path));
  std::optional<Entity> dot;
  if (cache_) {
    auto gen = cache_->GetGeneration(pk);
    if (gen && gen->complete) {
      bool fresh = NowMs() - gen->validated_ms < options_.ttl_ms;
      if (!fresh) {
        auto current = FetchDot(pk);
        STAMPFS_RETURN_IF_ERROR(current);
        dot = *current;
        fresh = ConfirmedBy(pk, &*gen, *dot);
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
          for (const Entity& e : entries) cache_->PutEntry(e, NowMs()).PermitUnchecked();
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
    cache_->PutListing(pk, entries, dot->etag, NowMs()).PermitUnchecked();
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
bool Namespace::ConfirmedBy(const std::string& pk, DirectoryGeneration* gen, const Entity& dot) {
  if (dot.etag != gen->dot_etag) return false;
  gen->validated_ms = NowMs();
  cache_->SetGeneration(pk, *gen).PermitUnchecked();
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
      auto dot = FetchDot(pk);
      if (dot.status().Is(Code::kNotFound)) {
        cache_->DropPartition(pk).PermitUnchecked();
        return Status(Code::kNotFound, JoinPath(dir_path, name));
      }
      STAMPFS_RETURN_IF_ERROR(dot);
      if (!ConfirmedBy(pk, &*gen, *dot)) {
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
      if (!listed.status().Is(Code::kTooLarge)) return listed.status();
    }
  }
  table_requests++;
  auto r = table_.Get(options_.table, pk, rk);
  if (cache_) {
    if (r.ok()) cache_->PutEntry(*r, NowMs()).PermitUnchecked();
    if (r.status().Is(Code::kNotFound)) cache_->EraseEntry(pk, rk).PermitUnchecked();
  }
  if (r.status().Is(Code::kNotFound)) return Status(Code::kNotFound, JoinPath(dir_path, name));
  return r;
}

// The root's attributes are its "." row: cached like an entry (fresh for
// the TTL, or while the root's complete listing is), and a read that finds
// the listing's "." ETag unchanged revalidates the listing too.
Result<Entity> Namespace::FetchRootDot(bool fresh) {
  const std::string pk = PartitionKeyForDirectory("/");
  std::optional<DirectoryGeneration> gen;
  if (cache_) gen = cache_->GetGeneration(pk);
  if (cache_ && !fresh) {
    auto ce = cache_->GetEntry(pk, kDotRowKey);
    const bool listed = gen && gen->complete && NowMs() - gen->validated_ms < options_.ttl_ms;
    if (ce && ce->entity.properties.count("ino") &&
        (listed || NowMs() - ce->fetched_ms < options_.ttl_ms)) {
      return ce->entity;
    }
  }
  auto dot = FetchDot(pk);
  STAMPFS_RETURN_IF_ERROR(dot);
  if (cache_) {
    CacheDot(*dot);
    if (gen && gen->complete && !ConfirmedBy(pk, &*gen, *dot)) {
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
          const bool was_dir = old && IsDirEntity(old->entity);
          bool is_dir = false;
          if (ops[i].kind != TableOperation::Kind::kDelete) {
            is_dir = e.Has("mode") ? IsDirEntity(e) : was_dir;
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

Result<Attr> Namespace::Lookup(uint64_t parent, const std::string& name) {
  auto loc = Locate(parent, name);
  STAMPFS_RETURN_IF_ERROR(loc);
  auto named = FetchEntry(loc->parent_path, name, false);
  STAMPFS_RETURN_IF_ERROR(named);
  auto e = ResolveLink(*named, false);
  STAMPFS_RETURN_IF_ERROR(e);
  auto attr = AttrFromEntity(*e);
  STAMPFS_RETURN_IF_ERROR(attr);
  if (RemovedHere(attr->ino)) {
    // Read before this mount's unlink or rename over the name finished (the
    // kernel revalidates a name without the directory's lock): what the
    // name holds now, never the removed inode under it again.
    e = FetchEntry(loc->parent_path, name, true);
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
  auto named = FetchEntry(loc->parent_path, name, false);
  STAMPFS_RETURN_IF_ERROR(named);
  auto e = ResolveLink(*named, false);
  STAMPFS_RETURN_IF_ERROR(e);
  return AttrFromEntity(*e);
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

Result<std::vector<DirEntry>> Namespace::ReadDir(uint64_t ino) {
  auto path = PathOf(ino);
  STAMPFS_RETURN_IF_ERROR(path);
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
  for (const Entity& e : *entities) {
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
    auto counter = table_.Get(options_.table, kFsPartition, kInoCounterRow);
    STAMPFS_RETURN_IF_ERROR(counter);
    int64_t next = counter->GetInt64("next");
    Entity updated{
        kFsPartition, kInoCounterRow, {{"next", next + static_cast<int64_t>(count)}}, {}};
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
