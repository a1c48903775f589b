// The REST implementations of BlobStore and TableStore.
#pragma once

#include <memory>

#include "storage/auth.h"  // HttpDateFn
#include "storage/blob_store.h"
#include "storage/connection_string.h"
#include "storage/http.h"
#include "storage/table_store.h"

namespace stampfs {

inline constexpr const char* kBlobApiVersion = "2021-08-06";
inline constexpr const char* kTableApiVersion = "2019-02-02";

struct ClientOptions {
  RetryPolicy retry;
  BreakerPolicy breaker;                     // each client (one endpoint) gets its own when enabled
  std::shared_ptr<HttpTransport> transport;  // default: MakeCurlTransport()
  HttpDateFn now;                            // default: HttpDateNow
};

std::unique_ptr<BlobStore> MakeAzureBlobClient(const StorageAccount& account,
                                               ClientOptions options = {});
std::unique_ptr<TableStore> MakeAzureTableClient(const StorageAccount& account,
                                                 ClientOptions options = {});

// Turns a non-2xx response into a Status: HTTP status, x-ms-error-code (from
// the header, else the XML or JSON error body), and the service's message
// without its RequestId/Time lines. Shared by both clients.
Status StatusFromResponse(const HttpResponse& response, const std::string& context);

}  // namespace stampfs
