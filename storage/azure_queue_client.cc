// QueueStore over the Azure Queue REST API (Azure and Azurite). Shared Key
// signs as for blobs; a SAS and Entra ID tokens as for the other services.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "storage/auth.h"
#include "storage/azure_clients.h"
#include "storage/blob_xml.h"
#include "storage/queue_store.h"

namespace stampfs {
namespace {

using Query = UrlQuery;

class AzureQueueClient final : public QueueStore {
 public:
  AzureQueueClient(StorageAccount account, const ClientOptions& options)
      : account_(std::move(account)),
        http_(options.transport
                  ? options.transport
                  : std::shared_ptr<HttpTransport>(MakeCurlTransport({account_.ca_file})),
              options.retry, {}, {}, MakeBreaker(options.breaker)),
        signer_(MakeSigner(account_, Service::kQueue, options.now ? options.now : HttpDateNow)) {}

  Status CreateQueue(const std::string& queue) override {
    STAMPFS_RETURN_IF_ERROR(CheckQueueName(queue));
    auto r = Call(NewRequest("PUT", Url("/" + queue)), "create queue " + queue);
    return r.status();  // 201 created, 204 there already
  }

  Result<std::vector<QueueMessage>> GetMessages(const std::string& queue, int max,
                                                std::chrono::seconds visibility) override {
    return Messages(
        queue,
        {{"numofmessages", Count(max)},
         {"visibilitytimeout", std::to_string(std::max<int64_t>(1, visibility.count()))}},
        "get messages of queue " + queue);
  }

  Result<std::vector<QueueMessage>> PeekMessages(const std::string& queue, int max) override {
    return Messages(queue, {{"peekonly", "true"}, {"numofmessages", Count(max)}},
                    "peek messages of queue " + queue);
  }

  Status DeleteMessage(const std::string& queue, const std::string& id,
                       const std::string& pop_receipt) override {
    STAMPFS_RETURN_IF_ERROR(CheckQueueName(queue));
    const std::string url =
        Url("/" + queue + "/messages/" + UrlEncode(id), {{"popreceipt", pop_receipt}});
    return Call(NewRequest("DELETE", url), "delete message " + id + " of queue " + queue).status();
  }

  Status PutMessage(const std::string& queue, const std::string& text,
                    std::chrono::seconds ttl) override {
    STAMPFS_RETURN_IF_ERROR(CheckQueueName(queue));
    if (text.size() > kMaxQueueMessageBytes) {
      return Status(Code::kTooLarge, "a queue message holds at most 64 KiB");
    }
    Query q;
    if (ttl.count() > 0) q.emplace_back("messagettl", std::to_string(ttl.count()));
    HttpRequest request = NewRequest("POST", Url("/" + queue + "/messages", q));
    request.body = HttpBody::FromString(BuildQueueMessageXml(text));
    request.SetHeader("Content-Type", "application/xml");
    return Call(std::move(request), "put message to queue " + queue).status();
  }

 private:
  static std::string Count(int max) {
    return std::to_string(std::clamp(max, 1, kMaxQueueMessagesPerGet));
  }

  // GET QUEUE/messages with `query` (a get or a peek).
  Result<std::vector<QueueMessage>> Messages(const std::string& queue, const Query& query,
                                             const std::string& context) {
    STAMPFS_RETURN_IF_ERROR(CheckQueueName(queue));
    auto r = Call(NewRequest("GET", Url("/" + queue + "/messages", query)), context);
    if (!r.ok()) return r.status();
    auto messages = ParseQueueMessagesXml(r->body);
    if (!messages.ok()) return messages.status().WithContext(context);
    return messages;
  }

  std::string Url(const std::string& path, const Query& query = {}) const {
    return WithQuery(account_.queue_endpoint + path, query);
  }

  static HttpRequest NewRequest(const std::string& method, std::string url) {
    return ServiceRequest(method, std::move(url), kQueueApiVersion);
  }

  Result<HttpResponse> Call(HttpRequest request, const std::string& context) {
    auto response = http_.Execute(std::move(request), signer_);
    if (!response.ok()) return response.status().WithContext(context);
    if (response->status >= 200 && response->status < 300) return response;
    return StatusFromResponse(*response, context);
  }

  StorageAccount account_;
  RetryingHttpClient http_;
  RequestSigner signer_;
};

}  // namespace

Status CheckQueueName(const std::string& queue) {
  if (IsValidContainerName(queue)) return Status::Ok();
  return Status(Code::kInvalidArgument,
                "invalid queue name '" + queue +
                    "': 3-63 lowercase letters, digits and single hyphens, starting and ending "
                    "with a letter or digit");
}

std::unique_ptr<QueueStore> MakeAzureQueueClient(const StorageAccount& account,
                                                 const ClientOptions& options) {
  return std::make_unique<AzureQueueClient>(account, options);
}

}  // namespace stampfs
