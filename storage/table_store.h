// TableStore: the Azure Table operations stampfs needs, independent of HTTP.
// Implemented by AzureTableClient (REST + JSON), FakeTableStore (memory) and
// FaultyTableStore (fault injection around any other TableStore).
//
// Keys given here are already valid table keys (see table_keys.h for how file
// names become keys). Entity ETags are opaque strings (W/"datetime'...'"),
// passed back verbatim in conditions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "storage/blob_store.h"  // Condition
#include "storage/status.h"

namespace stampfs {

struct Binary {
  std::string bytes;
  bool operator==(const Binary&) const = default;
};

// Edm.String, Edm.Int64, Edm.Int32, Edm.Boolean, Edm.Double, Edm.Binary.
using PropertyValue = std::variant<std::string, int64_t, int32_t, bool, double, Binary>;

struct Entity {
  std::string partition_key;
  std::string row_key;
  std::map<std::string, PropertyValue> properties;  // without PartitionKey/RowKey/Timestamp
  std::string etag;                                 // set on entities read from the store

  // Typed accessors; nullptr/default when absent or of another type.
  const std::string* GetString(const std::string& name) const;
  int64_t GetInt64(const std::string& name, int64_t fallback = 0) const;
  const Binary* GetBinary(const std::string& name) const;
  bool Has(const std::string& name) const { return properties.count(name) != 0; }
};

// Azure's limits, checked before sending (kTooLarge / kInvalidArgument).
inline constexpr size_t kMaxEntityBytes = 1024 * 1024;       // Azure size formula
inline constexpr size_t kMaxPropertyValueBytes = 64 * 1024;  // string (UTF-16) or binary
inline constexpr size_t kMaxProperties = 252;                // 255 minus PK, RK, Timestamp
inline constexpr size_t kMaxBatchOperations = 100;
inline constexpr size_t kMaxBatchBytes = 4 * 1024 * 1024;
inline constexpr size_t kMaxKeyUtf16Units = 512;             // 1 KiB

// Size of an entity by Azure's formula; and a check of every limit above
// plus key and property-name validity.
size_t EntitySizeBytes(const Entity& entity);
Status ValidateEntity(const Entity& entity);

enum class UpdateMode { kReplace, kMerge };

struct TableOperation {
  enum class Kind {
    kInsert,   // fails kAlreadyExists if present
    kReplace,  // condition None = insert-or-replace; IfMatch = update
    kMerge,    // condition None = insert-or-merge; IfMatch = merge
    kDelete,   // condition must be IfMatch (etag or "*")
  };
  Kind kind = Kind::kInsert;
  Entity entity;  // for kDelete only the keys matter
  Condition condition;

  static TableOperation Insert(Entity e) { return {Kind::kInsert, std::move(e), Condition::None()}; }
  static TableOperation Replace(Entity e, Condition c) { return {Kind::kReplace, std::move(e), std::move(c)}; }
  static TableOperation Merge(Entity e, Condition c) { return {Kind::kMerge, std::move(e), std::move(c)}; }
  static TableOperation Delete(std::string pk, std::string rk, Condition c);
};

// Result of a successful transaction: new ETags in operation order (empty for deletes).
struct BatchResult {
  std::vector<std::string> etags;
};

// A failed transaction: nothing was applied. `failed_index` names the
// operation the service rejected (-1 when the whole envelope was refused).
struct BatchError {
  Status status;
  int failed_index = -1;
};

struct QueryPage {
  std::vector<Entity> entities;
  // Opaque continuation; both empty on the last page.
  std::string next_partition_key;
  std::string next_row_key;
  bool done() const { return next_partition_key.empty() && next_row_key.empty(); }
};

struct QueryOptions {
  std::string filter;  // OData $filter, already in OData syntax (see FilterPartition)
  int top = 1000;      // page size, at most 1000
  std::vector<std::string> select;  // empty: all properties
};

class TableStore {
 public:
  virtual ~TableStore() = default;

  // kAlreadyExists when it exists.
  virtual Status CreateTable(const std::string& table) = 0;
  virtual Status DeleteTable(const std::string& table) = 0;

  virtual Result<Entity> Get(const std::string& table, const std::string& partition_key,
                             const std::string& row_key) = 0;
  // Returns the new ETag.
  virtual Result<std::string> Insert(const std::string& table, const Entity& entity) = 0;
  virtual Result<std::string> Update(const std::string& table, const Entity& entity,
                                     UpdateMode mode, const Condition& condition) = 0;
  virtual Status Delete(const std::string& table, const std::string& partition_key,
                        const std::string& row_key, const Condition& condition) = 0;

  // One page of a query; pass the previous page's continuation to go on.
  // (Qualified: the member shares the struct's name.)
  virtual Result<stampfs::QueryPage> QueryPage(const std::string& table,
                                               const QueryOptions& options,
                                               const std::string& next_partition_key,
                                               const std::string& next_row_key) = 0;
  // Every page.
  Result<std::vector<Entity>> Query(const std::string& table, const QueryOptions& options);
  Result<std::vector<Entity>> QueryPartition(const std::string& table,
                                             const std::string& partition_key);

  // One entity group transaction: at most kMaxBatchOperations operations on one
  // partition, each key once, at most kMaxBatchBytes. Atomic. Checked before
  // sending (kInvalidArgument / kTooLarge with failed_index -1).
  virtual Result<BatchResult> ExecuteBatch(const std::string& table,
                                           const std::vector<TableOperation>& operations,
                                           BatchError* error = nullptr) = 0;
};

// "PartitionKey eq '<pk>'" with quotes doubled.
std::string FilterPartition(const std::string& partition_key);

// Splits any number of operations on one partition into transactions of at
// most kMaxBatchOperations operations and kMaxBatchBytes, runs them in order,
// and when one times out splits it in two instead of resending it whole.
// Atomic per transaction only: on failure, earlier transactions stay applied;
// `applied` (if given) counts operations known to be applied.
Status ExecuteInBatches(TableStore& store, const std::string& table,
                        const std::vector<TableOperation>& operations, size_t* applied = nullptr);

}  // namespace stampfs
