#include "storage/table_store.h"

#include <utility>

#include "storage/table_batch.h"
#include "storage/table_keys.h"
#include "storage/utf8.h"

namespace stampfs {
namespace {

constexpr size_t kMaxPropertyNameLength = 255;
constexpr size_t kMaxStringUtf16Units = kMaxPropertyValueBytes / 2;

// Bytes of a value by Azure's formula (lengths in UTF-16 units).
size_t ValueSizeBytes(const PropertyValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return 4 + 2 * Utf16Length(*s);
  if (const auto* b = std::get_if<Binary>(&value)) return 4 + b->bytes.size();
  if (std::holds_alternative<int32_t>(value)) return 4;
  if (std::holds_alternative<bool>(value)) return 1;
  return 8;  // Int64, Double
}

// U+0000-U+001F and U+007F-U+009F.
bool IsControl(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

Status ValidateKey(const char* which, const std::string& key) {
  char32_t cp = 0;
  for (size_t i = 0; i < key.size();) {
    const size_t len = DecodeUtf8(key, i, &cp);
    if (len == 0) {
      return Status(Code::kInvalidArgument,
                    std::string(which) + " is not valid UTF-8 (escape it with EscapeKey)");
    }
    if (IsControl(cp) || cp == '/' || cp == '\\' || cp == '#' || cp == '?') {
      return Status(Code::kInvalidArgument, std::string(which) +
                                                " contains a character the Table service forbids "
                                                "(/ \\ # ? or a control character) at byte " +
                                                std::to_string(i));
    }
    i += len;
  }
  const size_t units = Utf16Length(key);
  if (units > kMaxKeyUtf16Units) {
    return Status(Code::kTooLarge, std::string(which) + " is " + std::to_string(units) +
                                       " UTF-16 units long, over the limit of " +
                                       std::to_string(kMaxKeyUtf16Units));
  }
  return Status::Ok();
}

bool IsAsciiLetter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// C#-identifier-like, ASCII only: [A-Za-z_][A-Za-z0-9_]*, and not a system property.
Status ValidatePropertyName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= kMaxPropertyNameLength &&
            (IsAsciiLetter(name[0]) || name[0] == '_');
  for (char c : name) ok = ok && (IsAsciiLetter(c) || (c >= '0' && c <= '9') || c == '_');
  if (!ok) {
    return Status(Code::kInvalidArgument,
                  "property name \"" + name +
                      "\" is not a valid identifier ([A-Za-z_][A-Za-z0-9_]*, "
                      "at most 255 characters)");
  }
  if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp") {
    return Status(Code::kInvalidArgument, "property name \"" + name + "\" is reserved");
  }
  return Status::Ok();
}

Status ValidateValue(const std::string& name, const PropertyValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) {
    if (!IsValidUtf8(*s)) {
      return Status(Code::kInvalidArgument, "property \"" + name + "\" is not valid UTF-8");
    }
    const size_t units = Utf16Length(*s);
    if (units > kMaxStringUtf16Units) {
      return Status(Code::kTooLarge,
                    "property \"" + name + "\" is a string of " + std::to_string(units) +
                        " UTF-16 units, over the limit of " + std::to_string(kMaxStringUtf16Units));
    }
  } else if (const auto* b = std::get_if<Binary>(&value)) {
    if (b->bytes.size() > kMaxPropertyValueBytes) {
      return Status(Code::kTooLarge, "property \"" + name + "\" is " +
                                         std::to_string(b->bytes.size()) +
                                         " bytes of binary, over the limit of " +
                                         std::to_string(kMaxPropertyValueBytes));
    }
  }
  return Status::Ok();
}

}  // namespace

const std::string* Entity::GetString(const std::string& name) const {
  const auto it = properties.find(name);
  return it == properties.end() ? nullptr : std::get_if<std::string>(&it->second);
}

int64_t Entity::GetInt64(const std::string& name, int64_t fallback) const {
  const auto it = properties.find(name);
  if (it == properties.end()) return fallback;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : fallback;
}

const Binary* Entity::GetBinary(const std::string& name) const {
  const auto it = properties.find(name);
  return it == properties.end() ? nullptr : std::get_if<Binary>(&it->second);
}

size_t EntitySizeBytes(const Entity& entity) {
  size_t size = 4 + 2 * (Utf16Length(entity.partition_key) + Utf16Length(entity.row_key));
  for (const auto& [name, value] : entity.properties) {
    size += 8 + 2 * Utf16Length(name) + ValueSizeBytes(value);
  }
  return size;
}

Status ValidateEntity(const Entity& entity) {
  STAMPFS_RETURN_IF_ERROR(ValidateKey("PartitionKey", entity.partition_key));
  STAMPFS_RETURN_IF_ERROR(ValidateKey("RowKey", entity.row_key));
  if (entity.properties.size() > kMaxProperties) {
    return Status(Code::kTooLarge, "entity has " + std::to_string(entity.properties.size()) +
                                       " properties, over the limit of " +
                                       std::to_string(kMaxProperties));
  }
  for (const auto& [name, value] : entity.properties) {
    STAMPFS_RETURN_IF_ERROR(ValidatePropertyName(name));
    STAMPFS_RETURN_IF_ERROR(ValidateValue(name, value));
  }
  const size_t size = EntitySizeBytes(entity);
  if (size > kMaxEntityBytes) {
    return Status(Code::kTooLarge, "entity is " + std::to_string(size) +
                                       " bytes by Azure's size formula, over the limit of " +
                                       std::to_string(kMaxEntityBytes));
  }
  return Status::Ok();
}

TableOperation TableOperation::Delete(std::string pk, std::string rk, Condition c) {
  Entity keys;
  keys.partition_key = std::move(pk);
  keys.row_key = std::move(rk);
  return {Kind::kDelete, std::move(keys), std::move(c)};
}

std::string FilterPartition(const std::string& partition_key) {
  std::string quoted;
  quoted.reserve(partition_key.size() + 2);
  for (char c : partition_key) {
    quoted.push_back(c);
    if (c == '\'') quoted.push_back('\'');
  }
  return "PartitionKey eq '" + quoted + "'";
}

Result<std::vector<Entity>> TableStore::Query(const std::string& table,
                                              const QueryOptions& options) {
  std::vector<Entity> all;
  std::string next_pk;
  std::string next_rk;
  // Loop on the continuation, never on the count: a page may be short or empty.
  do {
    auto page = QueryPage(table, options, next_pk, next_rk);
    if (!page.ok()) return page.status();
    for (auto& e : page->entities) all.push_back(std::move(e));
    next_pk = std::move(page->next_partition_key);
    next_rk = std::move(page->next_row_key);
  } while (!next_pk.empty() || !next_rk.empty());
  return all;
}

Result<std::vector<Entity>> TableStore::QueryPartition(const std::string& table,
                                                       const std::string& partition_key) {
  QueryOptions options;
  options.filter = FilterPartition(partition_key);
  return Query(table, options);
}

namespace {

using OpIter = std::vector<TableOperation>::const_iterator;

// Runs [begin, end) as one transaction; on a timeout (outcome unknown) or a
// body too large for one request (nothing applied), runs each half instead.
// A timed-out transaction that did apply makes the resent halves fail
// (inserts: kAlreadyExists, If-Match: kPreconditionFailed) rather than apply
// twice; unconditional upserts are idempotent.
Status RunSplitting(TableStore& store, const std::string& table, OpIter begin, OpIter end,
                    size_t* applied) {
  const std::vector<TableOperation> chunk(begin, end);
  BatchError error;
  auto result = store.ExecuteBatch(table, chunk, &error);
  if (result.ok()) {
    *applied += chunk.size();
    return Status::Ok();
  }
  const Status& st = result.status();
  const bool splittable =
      st.Is(Code::kTimeout) || (st.Is(Code::kTooLarge) && error.failed_index < 0);
  if (!splittable || chunk.size() < 2) return st;
  const OpIter middle = begin + static_cast<std::ptrdiff_t>(chunk.size() / 2);
  STAMPFS_RETURN_IF_ERROR(RunSplitting(store, table, begin, middle, applied));
  return RunSplitting(store, table, middle, end, applied);
}

}  // namespace

Status ExecuteInBatches(TableStore& store, const std::string& table,
                        const std::vector<TableOperation>& operations, size_t* applied) {
  size_t done = 0;
  Status status;
  constexpr size_t kBudget = kMaxBatchBytes - kBatchEnvelopeBytes;
  size_t start = 0;
  while (start < operations.size() && status.ok()) {
    size_t end = start;
    size_t bytes = 0;
    while (end < operations.size() && end - start < kMaxBatchOperations) {
      const size_t op_bytes = EstimateOperationBytes(operations[end]);
      // An operation too large on its own still goes alone; the store refuses it.
      if (end > start && bytes + op_bytes > kBudget) break;
      bytes += op_bytes;
      ++end;
    }
    status = RunSplitting(store, table, operations.begin() + static_cast<std::ptrdiff_t>(start),
                          operations.begin() + static_cast<std::ptrdiff_t>(end), &done);
    start = end;
  }
  if (applied) *applied = done;
  return status;
}

}  // namespace stampfs
