// FaultPlan and the fault-injecting BlobStore/TableStore decorators.
//
// Counting: every call through a decorator is one call of the operation named
// after the BlobStore/TableStore method ("Put", "PutBlockList", "QueryPage",
// "ExecuteBatch", ...). FailNth counts from the moment the rule is added, so a
// test can set up state first and then say "fail the 2nd PutBlock from now".
// The injector is called with the operation's own 1-based call number.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/fakes.h"

namespace stampfs {

struct FaultPlan::Rule {
  enum class Kind { kNth, kAlways };
  Kind kind = Kind::kNth;
  std::string operation;  // empty: every operation
  Status status;
  bool after_call = false;
  int target = 0;  // kNth: fire when the matching-call count reaches this
  bool fired = false;
};

void FaultPlan::FailNth(int n, Status status, const std::string& operation, bool after_call) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rule = std::make_shared<Rule>();
  rule->kind = Rule::Kind::kNth;
  rule->operation = operation;
  rule->status = std::move(status);
  rule->after_call = after_call;
  const int base = operation.empty() ? total_calls_ : calls_[operation];
  rule->target = base + n;
  rules_.push_back(std::move(rule));
}

void FaultPlan::FailAlways(Status status, const std::string& operation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rule = std::make_shared<Rule>();
  rule->kind = Rule::Kind::kAlways;
  rule->operation = operation;
  rule->status = std::move(status);
  rules_.push_back(std::move(rule));
}

void FaultPlan::SetInjector(Injector injector) {
  std::lock_guard<std::mutex> lock(mu_);
  injector_ = std::move(injector);
}

void FaultPlan::SetAfterBatchHook(AfterBatchHook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  after_batch_ = std::move(hook);
}

void FaultPlan::SetAfterReadHook(ReadHook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  after_read_ = std::move(hook);
}

void FaultPlan::AfterBatch() {
  AfterBatchHook hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = after_batch_;
  }
  if (hook) hook();
}

void FaultPlan::AfterRead(const std::string& partition_key, const std::string& row_key) {
  ReadHook hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = after_read_;
  }
  if (hook) hook(partition_key, row_key);
}

void FaultPlan::SetStreamHook(StreamHook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  stream_hook_ = std::move(hook);
}

// Removes every rule, the injector and the stream hook; call counts are kept.
void FaultPlan::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
  injector_ = nullptr;
  stream_hook_ = nullptr;
  after_batch_ = nullptr;
  after_read_ = nullptr;
}

Status FaultPlan::CheckStream(uint64_t offset) {
  StreamHook hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = stream_hook_;
  }
  return hook ? hook(offset) : Status::Ok();  // outside the lock: it may block
}

Status FaultPlan::Check(const std::string& operation, bool* after_call) {
  if (after_call != nullptr) *after_call = false;
  Injector injector;
  int call_number = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++total_calls_;
    call_number = ++calls_[operation];
    for (const auto& rule : rules_) {
      if (!rule->operation.empty() && rule->operation != operation) continue;
      if (rule->kind == Rule::Kind::kNth) {
        const int count = rule->operation.empty() ? total_calls_ : call_number;
        if (rule->fired || count != rule->target) continue;
        rule->fired = true;
      }
      if (after_call != nullptr) *after_call = rule->after_call;
      return rule->status;
    }
    injector = injector_;
  }
  // Outside the lock: an injector may look at calls() or change the plan.
  if (injector) return injector(operation, call_number);
  return Status::Ok();
}

int FaultPlan::calls(const std::string& operation) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (operation.empty()) return total_calls_;
  auto it = calls_.find(operation);
  return it == calls_.end() ? 0 : it->second;
}

Status ServerBusy() {
  return Status(Code::kThrottled, "injected: the server is busy", 503, "ServerBusy");
}

Status RequestTimeout() { return Status(Code::kTimeout, "injected: the request timed out"); }

Status PreconditionFailed() {
  return Status(Code::kPreconditionFailed, "injected: the condition specified was not met", 412,
                "ConditionNotMet");
}

namespace {

// Runs `call` unless the plan fails it first. An after-call fault runs `call`
// and then reports the fault instead of its result (a lost response).
template <typename Call>
auto Guarded(FaultPlan& plan, const char* operation, Call&& call) -> decltype(call()) {
  bool after = false;
  Status fault = plan.Check(operation, &after);
  if (fault.ok()) return call();
  if (after) StatusOf(call()).PermitUnchecked();  // the response is lost
  return fault;
}

class FaultyBlobStore : public BlobStore {
 public:
  FaultyBlobStore(BlobStore& inner, std::shared_ptr<FaultPlan> plan)
      : inner_(inner), plan_(std::move(plan)) {}

  Status CreateContainer(const std::string& container) override {
    return Guarded(*plan_, "CreateContainer", [&] { return inner_.CreateContainer(container); });
  }
  Status DeleteContainer(const std::string& container) override {
    return Guarded(*plan_, "DeleteContainer", [&] { return inner_.DeleteContainer(container); });
  }
  Status GetContainerProperties(const std::string& container) override {
    return Guarded(*plan_, "GetContainerProperties",
                   [&] { return inner_.GetContainerProperties(container); });
  }
  Result<BlobListing> ListBlobsPage(const std::string& container, const ListOptions& options,
                                    const std::string& marker) override {
    return Guarded(*plan_, "ListBlobsPage",
                   [&] { return inner_.ListBlobsPage(container, options, marker); });
  }
  Result<BlobProperties> GetProperties(const std::string& container,
                                       const std::string& blob) override {
    return Guarded(*plan_, "GetProperties", [&] { return inner_.GetProperties(container, blob); });
  }
  Result<ReadResult> Read(const std::string& container, const std::string& blob, uint64_t offset,
                          uint64_t length, const Condition& if_match,
                          const BodySink& sink) override {
    return Guarded(*plan_, "Read",
                   [&] { return inner_.Read(container, blob, offset, length, if_match, sink); });
  }
  // The plan's stream hook may end the stream between chunks.
  Result<ReadResult> ReadStream(const std::string& container, const std::string& blob,
                                uint64_t offset, uint64_t length, const Condition& if_match,
                                const BodySink& sink, std::chrono::milliseconds stall) override {
    return Guarded(*plan_, "ReadStream", [&]() -> Result<ReadResult> {
      Status cut;
      auto hooked = [&](uint64_t at, const char* data, size_t len) {
        cut = plan_->CheckStream(at);
        return cut.ok() && (!sink || sink(at, data, len));
      };
      auto r = inner_.ReadStream(container, blob, offset, length, if_match, hooked, stall);
      if (!cut.ok()) return cut;
      return r;
    });
  }
  Result<std::string> Put(const std::string& container, const std::string& blob,
                          const HttpBody& body, const BlobMetadata& metadata,
                          const Condition& condition) override {
    return Guarded(*plan_, "Put",
                   [&] { return inner_.Put(container, blob, body, metadata, condition); });
  }
  Status PutBlock(const std::string& container, const std::string& blob,
                  const std::string& block_id, const HttpBody& body) override {
    return Guarded(*plan_, "PutBlock",
                   [&] { return inner_.PutBlock(container, blob, block_id, body); });
  }
  Result<std::string> PutBlockList(const std::string& container, const std::string& blob,
                                   const std::vector<BlockRef>& blocks,
                                   const BlobMetadata& metadata, const Condition& condition,
                                   const std::string& content_md5 = "") override {
    return Guarded(*plan_, "PutBlockList", [&] {
      return inner_.PutBlockList(container, blob, blocks, metadata, condition, content_md5);
    });
  }
  Result<BlockList> GetBlockList(const std::string& container, const std::string& blob,
                                 BlockListType type) override {
    return Guarded(*plan_, "GetBlockList",
                   [&] { return inner_.GetBlockList(container, blob, type); });
  }
  Result<std::string> Copy(const std::string& container, const std::string& source,
                           const std::string& destination, const Condition& condition,
                           const std::string& source_if_match) override {
    return Guarded(*plan_, "Copy", [&] {
      return inner_.Copy(container, source, destination, condition, source_if_match);
    });
  }
  Status Delete(const std::string& container, const std::string& blob,
                const Condition& condition) override {
    return Guarded(*plan_, "Delete", [&] { return inner_.Delete(container, blob, condition); });
  }
  Result<std::string> SetMetadata(const std::string& container, const std::string& blob,
                                  const BlobMetadata& metadata,
                                  const Condition& condition) override {
    return Guarded(*plan_, "SetMetadata",
                   [&] { return inner_.SetMetadata(container, blob, metadata, condition); });
  }

 private:
  BlobStore& inner_;
  std::shared_ptr<FaultPlan> plan_;
};

class FaultyTableStore : public TableStore {
 public:
  FaultyTableStore(TableStore& inner, std::shared_ptr<FaultPlan> plan)
      : inner_(inner), plan_(std::move(plan)) {}

  Status CreateTable(const std::string& table) override {
    return Guarded(*plan_, "CreateTable", [&] { return inner_.CreateTable(table); });
  }
  Status DeleteTable(const std::string& table) override {
    return Guarded(*plan_, "DeleteTable", [&] { return inner_.DeleteTable(table); });
  }
  Result<Entity> Get(const std::string& table, const std::string& partition_key,
                     const std::string& row_key) override {
    return Guarded(*plan_, "Get", [&] {
      auto r = inner_.Get(table, partition_key, row_key);
      plan_->AfterRead(partition_key, row_key);
      return r;
    });
  }
  Result<std::string> Insert(const std::string& table, const Entity& entity) override {
    return Guarded(*plan_, "Insert", [&] { return inner_.Insert(table, entity); });
  }
  Result<std::string> Update(const std::string& table, const Entity& entity, UpdateMode mode,
                             const Condition& condition) override {
    return Guarded(*plan_, "Update", [&] { return inner_.Update(table, entity, mode, condition); });
  }
  Status Delete(const std::string& table, const std::string& partition_key,
                const std::string& row_key, const Condition& condition) override {
    return Guarded(*plan_, "Delete",
                   [&] { return inner_.Delete(table, partition_key, row_key, condition); });
  }
  Result<stampfs::QueryPage> QueryPage(const std::string& table, const QueryOptions& options,
                                       const std::string& next_partition_key,
                                       const std::string& next_row_key) override {
    return Guarded(*plan_, "QueryPage", [&] {
      return inner_.QueryPage(table, options, next_partition_key, next_row_key);
    });
  }
  // A fault here reports the whole transaction as failed (failed_index -1),
  // whether or not it was applied (after_call).
  Result<BatchResult> ExecuteBatch(const std::string& table,
                                   const std::vector<TableOperation>& operations,
                                   BatchError* error) override {
    bool after = false;
    Status fault = plan_->Check("ExecuteBatch", &after);
    if (fault.ok()) {
      auto r = inner_.ExecuteBatch(table, operations, error);
      if (r.ok()) plan_->AfterBatch();
      return r;
    }
    if (after) inner_.ExecuteBatch(table, operations, nullptr).status().PermitUnchecked();
    if (error != nullptr) *error = BatchError{fault, -1};
    return fault;
  }

 private:
  TableStore& inner_;
  std::shared_ptr<FaultPlan> plan_;
};

}  // namespace

std::unique_ptr<BlobStore> MakeFaultyBlobStore(BlobStore& inner, std::shared_ptr<FaultPlan> plan) {
  return std::make_unique<FaultyBlobStore>(inner, std::move(plan));
}

std::unique_ptr<TableStore> MakeFaultyTableStore(TableStore& inner,
                                                 std::shared_ptr<FaultPlan> plan) {
  return std::make_unique<FaultyTableStore>(inner, std::move(plan));
}

}  // namespace stampfs
