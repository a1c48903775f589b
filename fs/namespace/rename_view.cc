#include "fs/namespace/rename_view.h"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "fs/namespace/attr.h"
#include "fs/namespace/inode_table.h"
#include "fs/base/log.h"
#include "fs/namespace/names.h"
#include "fs/namespace/rename_intent.h"
#include "fs/namespace/table_scan.h"
#include "storage/table_keys.h"

namespace stampfs {

namespace {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool AtOrBelow(const std::string& path, const std::string& dir) {
  if (path == dir) return true;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (dir == "/" || path[dir.size()] == '/');
}

// The partition key of FilterPartition(pk), or nothing for any other filter.
std::optional<std::string> PartitionOfFilter(const std::string& filter) {
  static const std::string kPrefix = "PartitionKey eq '";
  if (filter.size() <= kPrefix.size() || filter.compare(0, kPrefix.size(), kPrefix) != 0 ||
      filter.back() != '\'') {
    return std::nullopt;
  }
  std::string pk;
  for (size_t i = kPrefix.size(); i + 1 < filter.size(); ++i) {
    if (filter[i] == '\'') {
      if (i + 2 >= filter.size() || filter[i + 1] != '\'') return std::nullopt;
      ++i;
    }
    pk.push_back(filter[i]);
  }
  return pk;
}

// The directory path of an escaped partition key (hashed keys: nothing).
std::optional<std::string> PathOfKey(const std::string& pk) {
  if (IsHashedKey(pk) || !IsDirectoryPartitionKey(pk)) return std::nullopt;
  auto path = UnescapeKey(pk);
  if (!path.ok() || path->empty() || (*path)[0] != '/') return std::nullopt;
  return *path;
}

uint64_t InoOf(const Entity& e) { return static_cast<uint64_t>(e.GetInt64("ino")); }

Status NotFound(const std::string& pk, const std::string& rk) {
  return Status(Code::kNotFound, "entity (" + pk + ", " + rk + ") does not exist", 404,
                "ResourceNotFound");
}

// One unfinished rename shown as finished.
struct Overlay {
  RenameIntent intent;
  Entity src;  // the source entry when the intent was read
  std::string from_pk, from_rk, to_pk, to_rk;

  // The entry at the new name, made from the source entry.
  Entity Target() const {
    Entity t = src;
    t.partition_key = to_pk;
    t.row_key = to_rk;
    SetEntryName(BaseName(intent.to), &t);
    t.properties.erase(kRenamingProperty);
    t.etag = "view:" + intent.id + ":" + src.etag;
    return t;
  }
};
using Overlays = std::vector<std::shared_ptr<const Overlay>>;

// How a partition is shown: as stored, hidden (at or below a renamed
// directory's old name), or merged with the old partition it moves from.
struct Mapping {
  enum Kind { kStored, kHidden, kMerged } kind = kStored;
  std::string old_pk;
  const Overlay* by = nullptr;
};

class RollForwardView : public TableStore {
 public:
  RollForwardView(TableStore& inner, RollForwardViewOptions options)
      : inner_(inner), options_(std::move(options)) {
    if (!options_.now_ms) options_.now_ms = SteadyNowMs;
  }

  Status CreateTable(const std::string& table) override { return inner_.CreateTable(table); }
  Status DeleteTable(const std::string& table) override { return inner_.DeleteTable(table); }
  Result<std::string> Insert(const std::string& table, const Entity& entity) override {
    return inner_.Insert(table, entity);
  }
  Result<std::string> Update(const std::string& table, const Entity& entity, UpdateMode mode,
                             const Condition& condition) override {
    return inner_.Update(table, entity, mode, condition);
  }
  Status Delete(const std::string& table, const std::string& pk, const std::string& rk,
                const Condition& condition) override {
    return inner_.Delete(table, pk, rk, condition);
  }
  Result<BatchResult> ExecuteBatch(const std::string& table,
                                   const std::vector<TableOperation>& operations,
                                   BatchError* error) override {
    return inner_.ExecuteBatch(table, operations, error);
  }

  Result<Entity> Get(const std::string& table, const std::string& pk,
                     const std::string& rk) override {
    if (table != options_.table || pk == kIntentsPartition) return inner_.Get(table, pk, rk);
    Overlays overlays = Current();
    if (!Touches(overlays, pk)) return inner_.Get(table, pk, rk);
    std::map<std::string, Entity> rows;
    auto row = Row(overlays, pk, rk);
    if (row.ok()) {
      rows[rk] = std::move(*row);
    } else if (!row.status().Is(Code::kNotFound)) {
      return row.status();
    }
    AdjustParents(overlays, pk, &rows, &rk);
    auto it = rows.find(rk);
    if (it == rows.end()) return NotFound(pk, rk);
    return it->second;
  }

  // A partition the view changes is answered in one page.
  Result<stampfs::QueryPage> QueryPage(const std::string& table, const QueryOptions& options,
                                       const std::string& npk, const std::string& nrk) override {
    auto pk = PartitionOfFilter(options.filter);
    if (table != options_.table || !npk.empty() || !nrk.empty() || !pk ||
        *pk == kIntentsPartition) {
      return inner_.QueryPage(table, options, npk, nrk);
    }
    Overlays overlays = Current();
    if (!Touches(overlays, *pk)) return inner_.QueryPage(table, options, npk, nrk);
    auto rows = Rows(overlays, *pk);
    STAMPFS_RETURN_IF_ERROR(rows);
    stampfs::QueryPage page;
    page.entities = std::move(*rows);
    return page;
  }

 private:
  // The renames shown as finished, read again after refresh_ms.
  Overlays Current() {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = options_.now_ms();
    if (loaded_ && now - loaded_ms_ < options_.refresh_ms) return overlays_;
    loaded_ = true;
    loaded_ms_ = now;
    auto rows = inner_.QueryPartition(options_.table, kIntentsPartition);
    if (!rows.ok()) {
      // No table (yet): no renames either; the mount says what is missing.
      if (!rows.status().Is(Code::kNotFound)) {
        LogWarning("read-only mount: unfinished renames could not be read (shown as stored): " +
                   rows.status().ToString());
      }
      return overlays_;
    }
    Overlays next;
    std::set<std::string> present;
    for (const Entity& row : *rows) {
      present.insert(row.row_key);
      auto intent = IntentFromEntity(row);
      if (!intent.ok()) {
        Announce(
            row.row_key, 0,
            "unfinished rename " + row.row_key + ": " + intent.status().message() + ": ignored");
        continue;
      }
      // An exchange's swap is one transaction, and each entry names the
      // blob holding its data throughout: as stored is right.
      if (intent->exchange) continue;
      std::string how;
      auto overlay = Evaluate(*intent, next, &how);
      if (overlay) next.push_back(overlay);
      if (!how.empty())
        Announce(intent->id, intent->created_ns,
                 "unfinished " + intent->Describe() + " by " + intent->host + " pid " +
                     std::to_string(intent->pid) + ": " + how);
    }
    for (std::set<std::string>* ids : {&warned_, &seen_}) {
      for (auto it = ids->begin(); it != ids->end();) {
        it = present.count(*it) ? std::next(it) : ids->erase(it);
      }
    }
    first_load_ = false;
    overlays_ = std::move(next);
    return overlays_;
  }

  // The overlay of one intent, or null (`how` says why; empty: read again later).
  std::shared_ptr<const Overlay> Evaluate(const RenameIntent& intent, const Overlays& taken,
                                          std::string* how) {
    for (const auto& o : taken) {
      for (const std::string* a : {&intent.from, &intent.to}) {
        for (const std::string* b : {&o->intent.from, &o->intent.to}) {
          if (AtOrBelow(*a, *b) || AtOrBelow(*b, *a)) {
            *how = "shown as stored (it overlaps the unfinished " + o->intent.Describe() + ")";
            return nullptr;
          }
        }
      }
    }
    auto o = std::make_shared<Overlay>();
    o->intent = intent;
    o->from_pk = PartitionKeyForDirectory(ParentPath(intent.from));
    o->from_rk = RowKeyForName(BaseName(intent.from));
    o->to_pk = PartitionKeyForDirectory(ParentPath(intent.to));
    o->to_rk = RowKeyForName(BaseName(intent.to));
    auto src = inner_.Get(options_.table, o->from_pk, o->from_rk);
    if (!src.ok() && !src.status().Is(Code::kNotFound)) return nullptr;
    if (!src.ok() || InoOf(*src) != intent.ino) {
      *how = "its source has moved already (or is gone): shown as stored";
      return nullptr;
    }
    auto dst = inner_.Get(options_.table, o->to_pk, o->to_rk);
    if (!dst.ok() && !dst.status().Is(Code::kNotFound)) return nullptr;
    if (dst.ok() && InoOf(*dst) != intent.ino && InoOf(*dst) != intent.replaced_ino) {
      *how = "its target was taken meanwhile (the roll-forward drops it): shown as stored";
      return nullptr;
    }
    o->src = std::move(*src);
    *how = "shown as finished";
    return o;
  }

  // Logs an intent: as a warning when the mount starts or once it is over a
  // minute old (a crashed mount's: it stays until a read-write mount or fsck
  // --repair finishes it), else at debug level (a live mount's rename).
  void Announce(const std::string& id, int64_t created_ns, const std::string& what) {
    const int64_t age_s = created_ns > 0 ? (NowNs() - created_ns) / 1000000000 : 0;
    const bool warn = first_load_ || created_ns == 0 || age_s >= 60;
    if (!(warn ? warned_ : seen_).insert(id).second) return;
    const std::string m = "read-only mount: " + what + " (written " + std::to_string(age_s) +
                          " s ago; the next read-write mount or stampfs fsck --repair finishes it)";
    if (warn) {
      warned_.insert(id);
      LogWarning(m);
    } else {
      LogDebug(m);
    }
  }

  Mapping MapPartition(const Overlays& overlays, const std::string& pk) const {
    auto path = PathOfKey(pk);
    if (!path) return {};
    for (const auto& o : overlays) {
      if (!o->intent.is_dir) continue;
      if (AtOrBelow(*path, o->intent.from)) return {Mapping::kHidden, "", o.get()};
      if (AtOrBelow(*path, o->intent.to)) {
        const std::string old_path = o->intent.from + path->substr(o->intent.to.size());
        return {Mapping::kMerged, PartitionKeyForDirectory(old_path), o.get()};
      }
    }
    return {};
  }

  bool Touches(const Overlays& overlays, const std::string& pk) const {
    if (overlays.empty()) return false;
    for (const auto& o : overlays) {
      if (pk == o->from_pk || pk == o->to_pk) return true;
    }
    return MapPartition(overlays, pk).kind != Mapping::kStored;
  }

  // A merged partition's "." row: the new one while it exists, else the old
  // one; its ETag changes when either does.
  static std::optional<Entity> MergedDot(const Mapping& m, const std::string& pk,
                                         const std::optional<Entity>& now,
                                         const std::optional<Entity>& old) {
    if (!now && !old) return std::nullopt;
    Entity dot = now ? *now : *old;
    dot.partition_key = pk;
    dot.etag =
        "view:" + m.by->intent.id + ":" + (now ? now->etag : "-") + ":" + (old ? old->etag : "-");
    return dot;
  }

  // One row of a partition as stored, hidden or merged.
  Result<Entity> Row(const Overlays& overlays, const std::string& pk, const std::string& rk) {
    const Mapping m = MapPartition(overlays, pk);
    if (m.kind == Mapping::kHidden) return NotFound(pk, rk);
    if (m.kind == Mapping::kStored) return inner_.Get(options_.table, pk, rk);
    // The old row first: one that moves between the two reads is then in the
    // new partition (a new row is written before the old one is deleted).
    auto old = Optional(inner_.Get(options_.table, m.old_pk, rk));
    STAMPFS_RETURN_IF_ERROR(old);
    auto now = Optional(inner_.Get(options_.table, pk, rk));
    STAMPFS_RETURN_IF_ERROR(now);
    if (rk == kDotRowKey) {
      auto dot = MergedDot(m, pk, *now, *old);
      if (!dot) return NotFound(pk, rk);
      return *dot;
    }
    if (*now) return **now;
    if (!*old) return NotFound(pk, rk);
    Entity moved = **old;
    moved.partition_key = pk;
    return moved;
  }

  // A partition's rows ("." included) as the view shows them, by RowKey.
  Result<std::vector<Entity>> Rows(const Overlays& overlays, const std::string& pk) {
    const Mapping m = MapPartition(overlays, pk);
    if (m.kind == Mapping::kHidden) return std::vector<Entity>{};
    std::map<std::string, Entity> rows;
    std::optional<Entity> old_dot, now_dot;
    if (m.kind == Mapping::kMerged) {
      auto old = inner_.QueryPartition(options_.table, m.old_pk);  // first: see Row
      STAMPFS_RETURN_IF_ERROR(old);
      for (Entity& e : *old) {
        if (e.row_key == kDotRowKey) {
          old_dot = std::move(e);
          continue;
        }
        e.partition_key = pk;
        rows[e.row_key] = std::move(e);
      }
    }
    auto now = inner_.QueryPartition(options_.table, pk);
    STAMPFS_RETURN_IF_ERROR(now);
    for (Entity& e : *now) {
      if (e.row_key == kDotRowKey && m.kind == Mapping::kMerged) {
        now_dot = std::move(e);
        continue;
      }
      rows[e.row_key] = std::move(e);
    }
    if (m.kind == Mapping::kMerged) {
      if (auto dot = MergedDot(m, pk, now_dot, old_dot)) rows[kDotRowKey] = std::move(*dot);
    }
    AdjustParents(overlays, pk, &rows, nullptr);
    std::vector<Entity> out;
    out.reserve(rows.size());
    for (auto& [rk, e] : rows) out.push_back(std::move(e));
    return out;
  }

  // In the directories holding a source or a target: the source entry
  // hidden, the target entry shown; the "." ETag names the intents applied.
  // `only`: just that row is wanted (a point read).
  static void AdjustParents(const Overlays& overlays, const std::string& pk,
                            std::map<std::string, Entity>* rows, const std::string* only) {
    std::string applied;
    for (const auto& o : overlays) {
      if (pk != o->from_pk && pk != o->to_pk) continue;
      applied += "+" + o->intent.id;
      if (pk == o->from_pk) {
        auto it = rows->find(o->from_rk);
        if (it != rows->end() && InoOf(it->second) == o->intent.ino) rows->erase(it);
      }
      if (pk == o->to_pk && (!only || *only == o->to_rk)) {
        auto it = rows->find(o->to_rk);
        if (it == rows->end() || InoOf(it->second) != o->intent.ino) {
          (*rows)[o->to_rk] = o->Target();
        }
      }
    }
    auto dot = rows->find(kDotRowKey);
    if (!applied.empty() && dot != rows->end()) dot->second.etag += ";view" + applied;
  }

  // kNotFound as an empty value; other errors stay errors.
  static Result<std::optional<Entity>> Optional(Result<Entity> r) {
    if (r.ok()) return std::optional<Entity>(std::move(*r));
    if (r.status().Is(Code::kNotFound)) return std::optional<Entity>();
    return r.status();
  }

  TableStore& inner_;
  RollForwardViewOptions options_;
  std::mutex mu_;
  bool loaded_ = false;           // GUARDED_BY(mu_)
  int64_t loaded_ms_ = 0;         // GUARDED_BY(mu_)
  Overlays overlays_;             // GUARDED_BY(mu_)
  bool first_load_ = true;        // GUARDED_BY(mu_)
  std::set<std::string> warned_;  // intent ids logged as warnings; GUARDED_BY(mu_)
  std::set<std::string> seen_;    // ... at debug level; GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<TableStore> MakeRollForwardView(TableStore& inner, RollForwardViewOptions options) {
  return std::make_unique<RollForwardView>(inner, std::move(options));
}

}  // namespace stampfs
