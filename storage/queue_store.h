// The storage Queue service: where Event Grid delivers the container's blob
// events (-o events, docs/design.md "Change events"). Messages are at least
// once: a message taken with Get stays hidden for its visibility timeout and
// comes back (its dequeue count one higher) unless deleted with the pop
// receipt of that Get; a later Get of it makes that receipt invalid (404).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/connection_string.h"
#include "storage/status.h"

namespace stampfs {

struct QueueMessage {
  std::string id;
  std::string pop_receipt;  // empty from Peek
  int64_t dequeue_count = 0;
  std::string text;  // as stored (Event Grid: base64 of the event's JSON)
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // Creates the queue; one that exists is OK.
  virtual Status CreateQueue(const std::string& queue) = 0;
  // Up to `max` (1..32) visible messages, each hidden for `visibility` from now.
  virtual Result<std::vector<QueueMessage>> GetMessages(const std::string& queue, int max,
                                                        std::chrono::seconds visibility) = 0;
  // Up to `max` (1..32) visible messages, left visible (no pop receipt).
  virtual Result<std::vector<QueueMessage>> PeekMessages(const std::string& queue, int max) = 0;
  // kNotFound when the message is gone or the receipt is no longer its latest.
  virtual Status DeleteMessage(const std::string& queue, const std::string& id,
                               const std::string& pop_receipt) = 0;
  // Text up to 64 KiB, kept for `ttl` (0: the service's default, 7 days).
  virtual Status PutMessage(const std::string& queue, const std::string& text,
                            std::chrono::seconds ttl = {}) = 0;
};

inline constexpr const char* kQueueApiVersion = "2021-08-06";
inline constexpr int kMaxQueueMessagesPerGet = 32;
inline constexpr size_t kMaxQueueMessageBytes = 64 * 1024;

// 3-63 of [a-z0-9-], starting and ending alphanumeric, no "--" (as containers).
Status CheckQueueName(const std::string& queue);

struct ClientOptions;  // storage/azure_clients.h
std::unique_ptr<QueueStore> MakeAzureQueueClient(const StorageAccount& account,
                                                 const ClientOptions& options);
// In memory with the service's semantics; `now` (ms) drives visibility.
std::unique_ptr<QueueStore> MakeFakeQueueStore(std::function<int64_t()> now_ms = nullptr);

}  // namespace stampfs
