#include "fs/admin/overlay_table.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "fs/namespace/attr.h"
#include "fs/namespace/table_scan.h"

namespace stampfs {

namespace {

class OverlayTable : public TableStore {
 public:
  OverlayTable(TableStore& stored, std::string table) : stored_(stored), table_(std::move(table)) {}

  Status CreateTable(const std::string& t) override { return stored_.CreateTable(t); }
  Status DeleteTable(const std::string& t) override { return stored_.DeleteTable(t); }

  Result<Entity> Get(const std::string& t, const std::string& pk, const std::string& rk) override {
    if (t != table_) return stored_.Get(t, pk, rk);
    if (IsInoCounter(pk, rk)) {
      std::lock_guard<std::mutex> lock(mu_);
      return InoCounterLocked();
    }
    auto stored = ReadStored(pk, rk);
    STAMPFS_RETURN_IF_ERROR(stored);
    std::lock_guard<std::mutex> lock(mu_);
    return MergedLocked(pk, rk, *stored);
  }

  Result<std::string> Insert(const std::string& t, const Entity& e) override {
    return One(t, TableOperation::Insert(e));
  }
  Result<std::string> Update(const std::string& t, const Entity& e, UpdateMode mode,
                             const Condition& c) override {
    return One(t, mode == UpdateMode::kMerge ? TableOperation::Merge(e, c)
                                             : TableOperation::Replace(e, c));
  }
  Status Delete(const std::string& t, const std::string& pk, const std::string& rk,
                const Condition& c) override {
    return One(t, TableOperation::Delete(pk, rk, c)).status();
  }

  Result<stampfs::QueryPage> QueryPage(const std::string& t, const QueryOptions& o,
                                       const std::string& npk, const std::string& nrk) override {
    std::optional<std::string> pk;
    if (t == table_) pk = OverlaidPartition(o.filter);
    if (!pk) return stored_.QueryPage(t, o, npk, nrk);
    // One page: every stored page merged with the overlay's rows.
    auto stored = stored_.Query(t, o);
    STAMPFS_RETURN_IF_ERROR(stored);
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, Entity> rows;
    for (const Entity& e : *stored) {
      auto merged = MergedLocked(*pk, e.row_key, e);
      if (merged.ok()) rows[e.row_key] = *merged;
    }
    if (auto part = parts_.find(*pk); part != parts_.end()) {
      for (const auto& [rk, row] : part->second.rows) {
        if (!rows.count(rk) && row.stored_etag.empty() && row.entity) rows[rk] = *row.entity;
      }
    }
    stampfs::QueryPage page;
    for (auto& [rk, e] : rows) page.entities.push_back(std::move(e));
    return page;
  }

  Result<BatchResult> ExecuteBatch(const std::string& t, const std::vector<TableOperation>& ops,
                                   BatchError* error) override {
    if (t != table_) return stored_.ExecuteBatch(t, ops, error);
    std::vector<Result<Entity>> stored;  // each row as stored (NotFound: none)
    for (const TableOperation& op : ops) {
      const std::string& pk = op.entity.partition_key;
      const std::string& rk = op.entity.row_key;
      auto r = IsInoCounter(pk, rk)
                   ? Result<Result<Entity>>(Result<Entity>(Status(Code::kNotFound, rk)))
                   : ReadStored(pk, rk);
      if (!r.ok()) return Fail(r.status(), static_cast<int>(stored.size()), error);
      stored.push_back(std::move(*r));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < ops.size(); ++i) {  // all or nothing: check first
      Status s = CheckLocked(ops[i], stored[i]);
      if (!s.ok()) return Fail(s, static_cast<int>(i), error);
    }
    BatchResult out;
    for (size_t i = 0; i < ops.size(); ++i) out.etags.push_back(ApplyLocked(ops[i], stored[i]));
    return out;
  }

 private:
  struct Row {
    std::optional<Entity> entity;  // nullopt: deleted here
    std::string stored_etag;       // the stored row's ETag when written ("" none)
  };
  struct Part {
    uint64_t generation = 0;  // writes to the partition (its "." ETag carries it)
    std::map<std::string, Row> rows;
  };

  static bool IsInoCounter(const std::string& pk, const std::string& rk) {
    return pk == kFsRowsPartition && rk == kInoCounterRowKey;
  }

  static Result<BatchResult> Fail(const Status& s, int index, BatchError* error) {
    if (error) *error = {s, index};
    return s;
  }

  // The stored row, or its absence as a NotFound value.
  Result<Result<Entity>> ReadStored(const std::string& pk, const std::string& rk) {
    auto r = stored_.Get(table_, pk, rk);
    if (!r.ok() && !r.status().Is(Code::kNotFound)) return r.status();
    return r;
  }

  Result<std::string> One(const std::string& t, const TableOperation& op) {
    BatchError error;
    auto r = ExecuteBatch(t, {op}, &error);
    if (!r.ok()) return r.status();
    return r->etags.empty() ? std::string() : r->etags.front();
  }

  std::optional<std::string> OverlaidPartition(const std::string& filter) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = filters_.find(filter);
    if (it == filters_.end()) return std::nullopt;
    return it->second;
  }

  Entity InoCounterLocked() const {
    Entity e{kFsRowsPartition, kInoCounterRowKey, {{"next", static_cast<int64_t>(next_ino_)}}, {}};
    e.etag = "overlay-ino-" + std::to_string(next_ino_);
    return e;
  }

  // What a reader sees of (pk, rk): the overlay's row while the stored one
  // is the one it was written over, else the stored row.
  Result<Entity> MergedLocked(const std::string& pk, const std::string& rk,
                              const Result<Entity>& stored) {
    const std::string stored_etag = stored.ok() ? stored->etag : "";
    auto part = parts_.find(pk);
    if (part == parts_.end()) return stored;
    auto row = part->second.rows.find(rk);
    if (row != part->second.rows.end() && row->second.stored_etag != stored_etag) {
      part->second.rows.erase(row);  // the stored row moved on: it wins
      row = part->second.rows.end();
    }
    if (row != part->second.rows.end()) {
      if (!row->second.entity) return Status(Code::kNotFound, pk + "/" + rk + " (removed here)");
      return *row->second.entity;
    }
    if (rk == kDotRowKey && stored.ok() && part->second.generation > 0) {
      Entity dot = *stored;
      dot.etag = stored->etag + "+overlay" + std::to_string(part->second.generation);
      return dot;
    }
    return stored;
  }

  Status CheckLocked(const TableOperation& op, const Result<Entity>& stored) {
    const std::string& pk = op.entity.partition_key;
    const std::string& rk = op.entity.row_key;
    Result<Entity> now =
        IsInoCounter(pk, rk) ? Result<Entity>(InoCounterLocked()) : MergedLocked(pk, rk, stored);
    if (op.kind == TableOperation::Kind::kInsert) {
      return now.ok() ? Status(Code::kAlreadyExists, pk + "/" + rk + " exists") : Status::Ok();
    }
    if (op.condition.kind != Condition::Kind::kIfMatch) return Status::Ok();
    if (!now.ok()) return Status(Code::kNotFound, pk + "/" + rk + " does not exist");
    if (op.condition.etag != "*" && op.condition.etag != now->etag) {
      return Status(Code::kPreconditionFailed, pk + "/" + rk + " changed");
    }
    return Status::Ok();
  }

  std::string ApplyLocked(const TableOperation& op, const Result<Entity>& stored) {
    const std::string& pk = op.entity.partition_key;
    const std::string& rk = op.entity.row_key;
    if (IsInoCounter(pk, rk)) {
      next_ino_ = std::max<uint64_t>(next_ino_, static_cast<uint64_t>(op.entity.GetInt64("next")));
      return InoCounterLocked().etag;
    }
    Part& part = parts_[pk];
    if (part.generation++ == 0) filters_[FilterPartition(pk)] = pk;
    if (rk == kDotRowKey && stored.ok()) return MergedLocked(pk, rk, stored)->etag;
    const Result<Entity> now = MergedLocked(pk, rk, stored);
    Row row;
    row.stored_etag = stored.ok() ? stored->etag : "";
    if (op.kind != TableOperation::Kind::kDelete) {
      Entity e = op.entity;
      if (op.kind == TableOperation::Kind::kMerge && now.ok()) {
        Entity merged = *now;
        for (const auto& [name, value] : e.properties) merged.properties[name] = value;
        e = std::move(merged);
      }
      e.etag = "overlay-" + std::to_string(++etags_);
      row.entity = std::move(e);
    }
    const std::string etag = row.entity ? row.entity->etag : "";
    part.rows[rk] = std::move(row);
    return etag;
  }

  TableStore& stored_;
  const std::string table_;
  std::mutex mu_;
  std::map<std::string, Part> parts_;     // GUARDED_BY(mu_), by partition key
  std::map<std::string, std::string> filters_;  // GUARDED_BY(mu_): a partition's query -> key
  uint64_t next_ino_ = kOverlayFirstIno;  // GUARDED_BY(mu_)
  uint64_t etags_ = 0;                    // GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<TableStore> MakeOverlayTable(TableStore& stored, const std::string& table) {
  return std::make_unique<OverlayTable>(stored, table);
}

}  // namespace stampfs
