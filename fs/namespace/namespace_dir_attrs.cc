// Namespace: the attributes a directory shows, from its own partition.
#include <sys/stat.h>

#include <algorithm>

#include "fs/namespace/namespace.h"
#include "fs/namespace/offline.h"
#include "storage/table_keys.h"

namespace stampfs {

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
}  // namespace

std::optional<Namespace::DirSummary> Namespace::CachedDirSummary(const std::string& pk,
                                                                 bool* fresh) {
  if (!cache_) return std::nullopt;
  auto dot = cache_->GetEntry(pk, kDotRowKey);
  if (!dot || !dot->entity.Has(kSubdirsProperty)) return std::nullopt;
  auto gen = cache_->GetGeneration(pk);
  const bool listed = gen && gen->complete && gen->dot_etag == dot->entity.etag &&
                      NowMs() - gen->validated_ms < options_.ttl_ms;
  const bool current = listed || NowMs() - dot->fetched_ms < options_.ttl_ms;
  if (fresh) *fresh = current;
  if (!fresh && !current) return std::nullopt;
  DirSummary s;
  s.touched = dot->entity.GetInt64("touched");
  s.subdirs = static_cast<uint64_t>(dot->entity.GetInt64(kSubdirsProperty));
  return s;
}

// Caches a "." row just read, keeping the subdirectory count derived for
// the same ETag (nothing in the partition changed since).
void Namespace::CacheDot(Entity dot, uint64_t ticket) {
  if (!cache_) return;
  auto old = cache_->GetEntry(dot.partition_key, kDotRowKey);
  if (old && old->entity.etag == dot.etag && old->entity.Has(kSubdirsProperty)) {
    dot.properties[kSubdirsProperty] = old->entity.properties.at(kSubdirsProperty);
  }
  cache_->PutFetched(dot, NowMs(), ticket).PermitUnchecked();
}

Result<Namespace::DirSummary> Namespace::FetchDirSummary(const std::string& path) {
  const std::string pk = PartitionKeyForDirectory(path);
  if (!cache_) return QueryDirSummary(path);
  // Offline (offline.h), what is cached of the partition answers, stale.
  bool fresh = false;
  std::optional<DirSummary> stale = CachedDirSummary(pk, &fresh);
  if (stale && fresh) return *stale;
  auto offline = [&](const Status& s) { return ServeStale(stale.has_value(), s); };
  auto gen = cache_->GetGeneration(pk);
  if (gen && gen->complete) {
    // One "." read revalidates a stale listing and the count with it.
    uint64_t ticket = 0;
    auto dot = stale ? RevalidateDot(pk, &ticket) : FetchDot(pk, &ticket);
    if (!dot.ok() && offline(dot.status())) return *stale;
    STAMPFS_RETURN_IF_ERROR(dot);
    if (ConfirmedBy(pk, &*gen, *dot, ticket)) {
      CacheDot(*dot, ticket);
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
    } else if (offline(listed.status())) {
      return *stale;
    } else if (!too_large) {
      return listed.status();
    }
  }
  if (!stale) return QueryDirSummary(path);
  RevalidationDeadline deadline(std::chrono::milliseconds(options_.offline_after_ms));
  auto queried = QueryDirSummary(path);
  if (!queried.ok() && offline(deadline.Outcome(queried.status()))) return *stale;
  return queried;
}

// The "." row and the subdirectory entries only: one page for most directories.
Result<Namespace::DirSummary> Namespace::QueryDirSummary(const std::string& path) {
  const std::string pk = PartitionKeyForDirectory(path);
  QueryOptions q;
  q.filter = FilterPartition(pk) + kSubdirsFilter;
  std::optional<Entity> dot;
  DirSummary s;
  std::string npk, nrk;
  const uint64_t ticket = cache_ ? cache_->ReadTicket(pk) : 0;
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
    cache_->PutFetched(*dot, NowMs(), ticket).PermitUnchecked();
  }
  return s;
}

Result<Attr> Namespace::WithDirectoryAttrs(const std::string& path, Attr attr) {
  if (!attr.IsDir()) return attr;
  auto s = FetchDirSummary(path);
  // No "." row: an unfinished mkdir or rmdir, or a directory another mount
  // is renaming away; its entry is all there is.
  if (s.status().Is(Code::kNotFound)) return attr;
  // Offline with nothing cached of the partition: the entry's own times and
  // link count (offline.h).
  if (ServeStale(true, s.status())) return attr;
  STAMPFS_RETURN_IF_ERROR(s);
  DirSummary summary = *s;
  // This mount's files created here and not committed yet (commit=async)
  // count as created: their commit stamps "touched" with the same time.
  summary.touched = std::max(summary.touched, PendingCreatedIn(PartitionKeyForDirectory(path)));
  return summary.ApplyTo(attr);
}

}  // namespace stampfs
