// In-memory BlobStore and TableStore with the service's semantics (ETags that
// change on every write, If-Match / If-None-Match, 409/412/404 as Azure returns
// them, atomic batches), and fault-injecting decorators for any store.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/blob_store.h"
#include "storage/table_store.h"

namespace stampfs {

std::unique_ptr<BlobStore> MakeFakeBlobStore();
std::unique_ptr<TableStore> MakeFakeTableStore();

// A fault plan shared by the decorators. An injector is asked before every
// call with the operation name ("Put", "PutBlockList", "ExecuteBatch", ...)
// and returns a Status to fail that call with, or OK to let it through.
// `after_call` faults apply the call first, then report the failure (a lost
// response: the write happened but the caller saw an error).
class FaultPlan {
 public:
  using Injector = std::function<Status(const std::string& operation, int call_number)>;

  // Fails the Nth call (1-based, counted over all operations, or only over
  // `operation` when it is non-empty) with `status`.
  void FailNth(int n, Status status, const std::string& operation = {}, bool after_call = false);
  // Fails every call of `operation` (empty = all) with `status` until Clear().
  void FailAlways(Status status, const std::string& operation = {});
  void SetInjector(Injector injector);
  // ReadStream: `hook` sees the stream offset of each chunk before the
  // caller's sink does; a non-OK status ends the stream there with it (a
  // connection lost mid-body). It may block (a slow service).
  using StreamHook = std::function<Status(uint64_t offset)>;
  void SetStreamHook(StreamHook hook);
  // ExecuteBatch: `hook` runs after a transaction the service applied, before
  // its caller sees the answer. It may block (a slow response).
  using AfterBatchHook = std::function<void()>;
  void SetAfterBatchHook(AfterBatchHook hook);
  // Get: `hook` runs with the row's keys after the service answered, before
  // the caller sees the answer (a response still on the wire). It may block.
  using ReadHook =
      std::function<void(const std::string& partition_key, const std::string& row_key)>;
  void SetAfterReadHook(ReadHook hook);
  void Clear();

  // For the decorators: returns the fault for this call (OK if none) and whether
  // it applies after the call.
  Status Check(const std::string& operation, bool* after_call);
  Status CheckStream(uint64_t offset);
  void AfterBatch();
  void AfterRead(const std::string& partition_key, const std::string& row_key);
  int calls(const std::string& operation = {}) const;

 private:
  struct Rule;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Rule>> rules_;
  std::map<std::string, int> calls_;
  int total_calls_ = 0;
  Injector injector_;
  StreamHook stream_hook_;
  AfterBatchHook after_batch_;
  ReadHook after_read_;
};

// Common statuses for fault plans.
Status ServerBusy();          // 503 ServerBusy (kThrottled)
Status RequestTimeout();      // kTimeout
Status PreconditionFailed();  // 412 ConditionNotMet

std::unique_ptr<BlobStore> MakeFaultyBlobStore(BlobStore& inner, std::shared_ptr<FaultPlan> plan);
std::unique_ptr<TableStore> MakeFaultyTableStore(TableStore& inner,
                                                 std::shared_ptr<FaultPlan> plan);

}  // namespace stampfs
