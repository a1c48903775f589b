// In-memory TableStore with the Table service's semantics (AZURE-PROTOCOL.md
// §4-§6): weak datetime ETags that change on every write, insert / replace /
// merge / delete with Azure's status codes, paged queries ordered by
// PartitionKey then RowKey, and all-or-nothing entity group transactions
// checked by the same rules as the Azure client (ValidateBatch).
//
// Invariants: one mutex guards all state; table names are case-insensitive
// (stored lower-cased); a fake clock makes every ETag strictly newer than the
// one before it.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "storage/fakes.h"
#include "storage/table_batch.h"

namespace stampfs {
namespace {

constexpr int kMaxTop = 1000;

Status TableNotFound(const std::string& table) {
  return Status(Code::kNotFound, "table " + table + " does not exist", 404, "TableNotFound");
}
Status EntityNotFound(const std::string& pk, const std::string& rk) {
  return Status(Code::kNotFound, "entity (" + pk + ", " + rk + ") does not exist", 404,
                "ResourceNotFound");
}
Status UpdateConditionNotSatisfied(const std::string& pk, const std::string& rk) {
  return Status(Code::kPreconditionFailed,
                "entity (" + pk + ", " + rk + ") changed: the condition was not satisfied", 412,
                "UpdateConditionNotSatisfied");
}
Status EntityAlreadyExists(const std::string& pk, const std::string& rk) {
  return Status(Code::kAlreadyExists, "entity (" + pk + ", " + rk + ") already exists", 409,
                "EntityAlreadyExists");
}

using Key = std::pair<std::string, std::string>;  // PartitionKey, RowKey: ordinal order
using Properties = std::map<std::string, PropertyValue>;

struct Row {
  Properties properties;
  std::string etag;
};

using Table = std::map<Key, Row>;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ^[A-Za-z][A-Za-z0-9]{2,62}$, and not the reserved "tables".
bool IsValidTableName(const std::string& name) {
  if (name.size() < 3 || name.size() > 63 || !std::isalpha(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return Lower(name) != "tables";
}

// W/"datetime'2026-12-02T13%3A08%3A29.9293636Z'" for `ticks` of 100 ns since the epoch.
std::string EtagForTicks(int64_t ticks) {
  const std::time_t seconds = static_cast<std::time_t>(ticks / 10000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "W/\"datetime'%04d-%02d-%02dT%02d%%3A%02d%%3A%02d.%07lldZ'\"",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ticks % 10000000));
  return buf;
}

// ---- $filter: comparisons of keys or properties with literals, joined by
// and / or / not and parentheses (the subset of OData that stampfs sends).

struct FilterNode {
  enum class Kind { kAll, kCompare, kAnd, kOr, kNot };
  Kind kind = Kind::kAll;
  std::string field;
  std::string op;  // eq ne gt ge lt le
  PropertyValue literal;
  std::unique_ptr<FilterNode> left, right;
};

struct Token {
  enum class Kind { kWord, kString, kNumber, kOpen, kClose };
  Kind kind;
  std::string text;
};

Status BadFilter(const std::string& why) {
  return Status(Code::kInvalidArgument, "fake table store: unsupported $filter: " + why, 400,
                "InvalidInput");
}

Result<std::vector<Token>> Tokenize(const std::string& f) {
  std::vector<Token> out;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < f.size();) {
    const char c = f[i];
    if (c == ' ') {
      ++i;
    } else if (c == '(' || c == ')') {
      out.push_back({c == '(' ? Token::Kind::kOpen : Token::Kind::kClose, {}});
      ++i;
    } else if (c == '\'') {
      std::string text;
      for (++i;; ++i) {
        if (i >= f.size()) return BadFilter("unterminated string");
        if (f[i] == '\'' && (i + 1 >= f.size() || f[i + 1] != '\'')) break;
        if (f[i] == '\'') ++i;  // '' stands for one quote
        text.push_back(f[i]);
      }
      ++i;
      out.push_back({Token::Kind::kString, std::move(text)});
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i + 1;
      while (j < f.size() && (word_char(f[j]) || f[j] == '.')) ++j;
      out.push_back({Token::Kind::kNumber, f.substr(i, j - i)});
      i = j;
    } else if (word_char(c)) {
      size_t j = i;
      while (j < f.size() && word_char(f[j])) ++j;
      if (j < f.size() && f[j] == '\'') return BadFilter("typed literal " + f.substr(i, j - i));
      out.push_back({Token::Kind::kWord, f.substr(i, j - i)});
      i = j;
    } else {
      return BadFilter(std::string("character '") + c + "'");
    }
  }
  return out;
}

Result<PropertyValue> ParseLiteral(const Token& t) {
  if (t.kind == Token::Kind::kString) return PropertyValue(t.text);
  if (t.kind == Token::Kind::kWord && (t.text == "true" || t.text == "false")) {
    return PropertyValue(t.text == "true");
  }
  if (t.kind != Token::Kind::kNumber) return BadFilter("expected a literal");
  try {
    if (t.text.find('.') != std::string::npos) return PropertyValue(std::stod(t.text));
    if (t.text.back() == 'L') return PropertyValue(int64_t{std::stoll(t.text)});
    return PropertyValue(int32_t{std::stoi(t.text)});
  } catch (const std::exception&) {
    return BadFilter("number " + t.text);
  }
}

class FilterParser {
 public:
  explicit FilterParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<std::unique_ptr<FilterNode>> ParseAll() {
    if (tokens_.empty()) return std::make_unique<FilterNode>();
    auto node = ParseBinary(0);
    if (node.ok() && pos_ != tokens_.size()) return BadFilter("trailing tokens");
    return node;
  }

 private:
  bool AtWord(const char* word) const {
    return pos_ < tokens_.size() && tokens_[pos_].kind == Token::Kind::kWord &&
           tokens_[pos_].text == word;
  }

  // level 0: or, level 1: and (binds tighter).
  Result<std::unique_ptr<FilterNode>> ParseBinary(int level) {
    auto left = level == 0 ? ParseBinary(1) : ParseUnary();
    STAMPFS_RETURN_IF_ERROR(left);
    const char* word = level == 0 ? "or" : "and";
    while (AtWord(word)) {
      ++pos_;
      auto right = level == 0 ? ParseBinary(1) : ParseUnary();
      STAMPFS_RETURN_IF_ERROR(right);
      auto node = std::make_unique<FilterNode>();
      node->kind = level == 0 ? FilterNode::Kind::kOr : FilterNode::Kind::kAnd;
      node->left = std::move(*left);
      node->right = std::move(*right);
      *left = std::move(node);
    }
    return left;
  }

  Result<std::unique_ptr<FilterNode>> ParseUnary() {
    if (pos_ >= tokens_.size()) return BadFilter("unexpected end");
    if (AtWord("not")) {
      ++pos_;
      auto inner = ParseUnary();
      STAMPFS_RETURN_IF_ERROR(inner);
      auto node = std::make_unique<FilterNode>();
      node->kind = FilterNode::Kind::kNot;
      node->left = std::move(*inner);
      return node;
    }
    if (tokens_[pos_].kind == Token::Kind::kOpen) {
      ++pos_;
      auto inner = ParseBinary(0);
      STAMPFS_RETURN_IF_ERROR(inner);
      if (pos_ >= tokens_.size() || tokens_[pos_].kind != Token::Kind::kClose) {
        return BadFilter("missing ')'");
      }
      ++pos_;
      return inner;
    }
    if (pos_ + 3 > tokens_.size() || tokens_[pos_].kind != Token::Kind::kWord ||
        tokens_[pos_ + 1].kind != Token::Kind::kWord) {
      return BadFilter("expected <name> <op> <literal>");
    }
    auto node = std::make_unique<FilterNode>();
    node->kind = FilterNode::Kind::kCompare;
    node->field = tokens_[pos_].text;
    node->op = tokens_[pos_ + 1].text;
    static const char* kOps[] = {"eq", "ne", "gt", "ge", "lt", "le"};
    if (std::find(std::begin(kOps), std::end(kOps), node->op) == std::end(kOps)) {
      return BadFilter("operator " + node->op);
    }
    auto literal = ParseLiteral(tokens_[pos_ + 2]);
    STAMPFS_RETURN_IF_ERROR(literal);
    node->literal = std::move(*literal);
    pos_ += 3;
    return node;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

// -1, 0, 1, or nullopt when the values are not comparable (Azure: no match).
std::optional<int> CompareValues(const PropertyValue& a, const PropertyValue& b) {
  auto sign = [](const auto& x, const auto& y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (auto* s = std::get_if<std::string>(&a)) {
    if (auto* t = std::get_if<std::string>(&b)) return sign(*s, *t);  // ordinal (bytes)
    return std::nullopt;
  }
  if (auto* s = std::get_if<bool>(&a)) {
    if (auto* t = std::get_if<bool>(&b)) return sign(*s, *t);
    return std::nullopt;
  }
  if (auto* s = std::get_if<Binary>(&a)) {
    if (auto* t = std::get_if<Binary>(&b)) return sign(s->bytes, t->bytes);
    return std::nullopt;
  }
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    return sign(std::get<int64_t>(a), std::get<int64_t>(b));  // exact beyond 2^53
  }
  auto number = [](const PropertyValue& v) -> std::optional<double> {
    if (auto* i = std::get_if<int32_t>(&v)) return *i;
    if (auto* l = std::get_if<int64_t>(&v)) return static_cast<double>(*l);
    if (auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;
  };
  auto x = number(a), y = number(b);
  if (x && y) return sign(*x, *y);
  return std::nullopt;
}

bool Matches(const FilterNode& n, const Key& key, const Properties& props) {
  switch (n.kind) {
    case FilterNode::Kind::kAll:
      return true;
    case FilterNode::Kind::kAnd:
      return Matches(*n.left, key, props) && Matches(*n.right, key, props);
    case FilterNode::Kind::kOr:
      return Matches(*n.left, key, props) || Matches(*n.right, key, props);
    case FilterNode::Kind::kNot:
      return !Matches(*n.left, key, props);
    case FilterNode::Kind::kCompare:
      break;
  }
  PropertyValue value;
  if (n.field == "PartitionKey") {
    value = key.first;
  } else if (n.field == "RowKey") {
    value = key.second;
  } else {
    auto it = props.find(n.field);
    if (it == props.end()) return false;  // a missing property matches nothing
    value = it->second;
  }
  const std::optional<int> c = CompareValues(value, n.literal);
  if (!c) return false;
  if (n.op == "eq") return *c == 0;
  if (n.op == "ne") return *c != 0;
  if (n.op == "gt") return *c > 0;
  if (n.op == "ge") return *c >= 0;
  if (n.op == "lt") return *c < 0;
  return *c <= 0;  // le
}

Result<std::unique_ptr<FilterNode>> ParseTableFilter(const std::string& filter) {
  auto tokens = Tokenize(filter);
  STAMPFS_RETURN_IF_ERROR(tokens);
  return FilterParser(std::move(*tokens)).ParseAll();
}

// The outcome of one write, computed before anything is applied.
struct PlannedWrite {
  Key key;
  std::optional<Properties> properties;  // nullopt: delete
};

// Decides what `op` does to `table` (which it does not change) or why it fails.
Result<PlannedWrite> Plan(const Table& table, const TableOperation& op) {
  const Entity& e = op.entity;
  Key key{e.partition_key, e.row_key};
  auto it = table.find(key);
  const bool exists = it != table.end();
  const Condition& c = op.condition;
  // Like the client: replace/merge under If-None-Match "*" is sent as an insert.
  const bool insert =
      op.kind == TableOperation::Kind::kInsert ||
      (op.kind != TableOperation::Kind::kDelete && c.kind == Condition::Kind::kIfNoneMatchAny);
  if (insert) {
    if (exists) return EntityAlreadyExists(e.partition_key, e.row_key);
    return PlannedWrite{key, e.properties};
  }
  if (op.kind == TableOperation::Kind::kDelete && c.kind != Condition::Kind::kIfMatch) {
    return Status(Code::kInvalidArgument, "delete needs If-Match (an ETag or \"*\")", 400,
                  "InvalidInput");
  }
  if (c.kind == Condition::Kind::kIfMatch) {
    if (!exists) return EntityNotFound(e.partition_key, e.row_key);
    if (c.etag != "*" && c.etag != it->second.etag) {
      return UpdateConditionNotSatisfied(e.partition_key, e.row_key);
    }
  }
  switch (op.kind) {
    case TableOperation::Kind::kDelete:
      return PlannedWrite{key, std::nullopt};
    case TableOperation::Kind::kMerge: {
      Properties merged = exists ? it->second.properties : Properties{};
      for (const auto& [name, value] : e.properties) merged[name] = value;
      Entity check{e.partition_key, e.row_key, merged, {}};
      STAMPFS_RETURN_IF_ERROR(ValidateEntity(check));  // the merged entity must fit too
      return PlannedWrite{key, std::move(merged)};
    }
    default:
      return PlannedWrite{key, e.properties};
  }
}

class FakeTableStore : public TableStore {
 public:
  Status CreateTable(const std::string& table) override {
    if (!IsValidTableName(table)) {
      return Status(Code::kInvalidArgument, "invalid table name \"" + table + "\"");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!tables_.emplace(Lower(table), Table{}).second) {
      return Status(Code::kAlreadyExists, "table " + table + " already exists", 409,
                    "TableAlreadyExists");
    }
    return Status::Ok();
  }

  Status DeleteTable(const std::string& table) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto t = FindTable(table);
    if (!t.ok() && t.status().Is(Code::kInvalidArgument)) return t.status();
    if (tables_.erase(Lower(table)) == 0) {
      return Status(Code::kNotFound, "table " + table + " does not exist", 404, "ResourceNotFound");
    }
    return Status::Ok();
  }

  Result<Entity> Get(const std::string& table, const std::string& partition_key,
                     const std::string& row_key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto t = FindTable(table);
    STAMPFS_RETURN_IF_ERROR(t);
    auto it = (*t)->find(Key{partition_key, row_key});
    if (it == (*t)->end()) return EntityNotFound(partition_key, row_key);
    return EntityOf(it->first, it->second, {});
  }

  Result<std::string> Insert(const std::string& table, const Entity& entity) override {
    return WriteOne(table, TableOperation::Insert(entity));
  }

  Result<std::string> Update(const std::string& table, const Entity& entity, UpdateMode mode,
                             const Condition& condition) override {
    return WriteOne(table, mode == UpdateMode::kMerge ? TableOperation::Merge(entity, condition)
                                                      : TableOperation::Replace(entity, condition));
  }

  Status Delete(const std::string& table, const std::string& partition_key,
                const std::string& row_key, const Condition& condition) override {
    return WriteOne(table, TableOperation::Delete(partition_key, row_key, condition)).status();
  }

  Result<stampfs::QueryPage> QueryPage(const std::string& table, const QueryOptions& options,
                                       const std::string& next_partition_key,
                                       const std::string& next_row_key) override;

  Result<BatchResult> ExecuteBatch(const std::string& table,
                                   const std::vector<TableOperation>& operations,
                                   BatchError* error) override;

 private:
  // Helpers below expect mu_ to be held.
  Result<Table*> FindTable(const std::string& table) {
    if (!IsValidTableName(table)) {
      return Status(Code::kInvalidArgument, "invalid table name \"" + table + "\"");
    }
    auto it = tables_.find(Lower(table));
    if (it == tables_.end()) return TableNotFound(table);
    return &it->second;
  }

  std::string NextEtag() {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() /
                        100;
    last_ticks_ = std::max(now, last_ticks_ + 1);
    return EtagForTicks(last_ticks_);
  }

  // Applies a planned write; returns the new ETag (empty for a delete).
  std::string Apply(Table& table, PlannedWrite write) {
    if (!write.properties) {
      table.erase(write.key);
      return {};
    }
    Row& row = table[write.key];
    row.properties = std::move(*write.properties);
    row.etag = NextEtag();
    return row.etag;
  }

  static Entity EntityOf(const Key& key, const Row& row, const std::vector<std::string>& select) {
    Entity e;
    e.partition_key = key.first;
    e.row_key = key.second;
    e.etag = row.etag;
    if (select.empty()) {
      e.properties = row.properties;
    } else {
      for (const std::string& name : select) {
        auto it = row.properties.find(name);
        if (it != row.properties.end()) e.properties.insert(*it);
      }
    }
    return e;
  }

  Result<std::string> WriteOne(const std::string& table, const TableOperation& op) {
    if (op.kind != TableOperation::Kind::kDelete)
      STAMPFS_RETURN_IF_ERROR(ValidateEntity(op.entity));
    std::lock_guard<std::mutex> lock(mu_);
    auto t = FindTable(table);
    STAMPFS_RETURN_IF_ERROR(t);
    auto write = Plan(**t, op);
    STAMPFS_RETURN_IF_ERROR(write);
    return Apply(**t, std::move(*write));
  }

  std::mutex mu_;
  std::map<std::string, Table> tables_;
  int64_t last_ticks_ = 0;
};

// Continuations are "!" + the key of the next matching row, so an empty key
// still gives a non-empty (not done) continuation.
Result<stampfs::QueryPage> FakeTableStore::QueryPage(const std::string& table,
                                                     const QueryOptions& options,
                                                     const std::string& next_partition_key,
                                                     const std::string& next_row_key) {
  const int top = std::clamp(options.top, 1, kMaxTop);  // as the client sends it
  auto filter = ParseTableFilter(options.filter);
  STAMPFS_RETURN_IF_ERROR(filter);
  const bool resume = !next_partition_key.empty() || !next_row_key.empty();
  if (resume && (!next_partition_key.starts_with('!') || !next_row_key.starts_with('!'))) {
    return Status(Code::kInvalidArgument, "not a continuation of this store", 400, "InvalidInput");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto t = FindTable(table);
  STAMPFS_RETURN_IF_ERROR(t);
  stampfs::QueryPage page;
  auto it = resume ? (*t)->lower_bound(Key{next_partition_key.substr(1), next_row_key.substr(1)})
                   : (*t)->begin();
  for (; it != (*t)->end(); ++it) {
    if (!Matches(**filter, it->first, it->second.properties)) continue;
    if (static_cast<int>(page.entities.size()) == top) {
      page.next_partition_key = "!" + it->first.first;
      page.next_row_key = "!" + it->first.second;
      break;
    }
    page.entities.push_back(EntityOf(it->first, it->second, options.select));
  }
  return page;
}

Result<BatchResult> FakeTableStore::ExecuteBatch(const std::string& table,
                                                 const std::vector<TableOperation>& operations,
                                                 BatchError* error) {
  auto fail = [error](Status status, int index) -> Result<BatchResult> {
    if (error != nullptr) *error = BatchError{status, index};
    return status;
  };
  // The same checks the Azure client makes before sending.
  int failed_index = -1;
  Status valid = ValidateBatch(operations, &failed_index);
  if (!valid.ok()) return fail(valid, failed_index);
  auto body = BuildBatchBody("http://127.0.0.1:10002/devstoreaccount1", table, operations,
                             NewBoundaryId(), NewBoundaryId());
  if (!body.ok()) return fail(body.status(), -1);
  if (body->body.size() > kMaxBatchBytes) {
    return fail(Status(Code::kTooLarge, "batch body over 4 MiB", 413, "RequestBodyTooLarge"), -1);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto t = FindTable(table);
  if (!t.ok()) return fail(t.status(), 0);  // the service blames the first operation
  // Keys are unique within a batch, so each operation can be planned against
  // the unchanged table; nothing is applied unless every plan succeeds.
  std::vector<PlannedWrite> writes;
  writes.reserve(operations.size());
  for (size_t i = 0; i < operations.size(); ++i) {
    auto write = Plan(**t, operations[i]);
    if (!write.ok()) return fail(write.status(), static_cast<int>(i));
    writes.push_back(std::move(*write));
  }
  BatchResult result;
  for (PlannedWrite& write : writes) result.etags.push_back(Apply(**t, std::move(write)));
  return result;
}

}  // namespace

std::unique_ptr<TableStore> MakeFakeTableStore() { return std::make_unique<FakeTableStore>(); }

}  // namespace stampfs
