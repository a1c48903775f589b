// Internal to the Blob and Queue REST clients: the services' XML bodies
// (listing, block list, queue messages, error) and the header formats it uses (RFC 1123 dates,
// quoted ETags, Content-Range). Pure functions, no I/O, so they are unit-tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/blob_store.h"
#include "storage/queue_store.h"
#include "storage/status.h"

namespace stampfs {

// <EnumerationResults> of List Blobs. ETags come back quoted, names decoded
// (XML entities, and percent-encoding when the service marks Encoded="true").
// kCorruption for anything that is not such a document.
Result<BlobListing> ParseBlobListingXml(std::string_view body);

// <BlockList> of Get Block List (committed and uncommitted blocks; etag unset).
Result<BlockList> ParseBlockListXml(std::string_view body);

// The <BlockList> body of Put Block List, in order.
std::string BuildBlockListXml(const std::vector<BlockRef>& blocks);

// <QueueMessagesList> of Get/Peek Messages (message text as stored).
Result<std::vector<QueueMessage>> ParseQueueMessagesXml(std::string_view body);

// The <QueueMessage> body of Put Message.
std::string BuildQueueMessageXml(std::string_view text);

// <Error><Code>..</Code><Message>..</Message></Error>; nullopt when the body
// is not such a document.
struct ServiceError {
  std::string code;
  std::string message;
};
std::optional<ServiceError> ParseErrorXml(std::string_view body);

// "Wed, 02 Dec 2026 13:07:26 GMT" -> Unix seconds; nullopt when malformed.
std::optional<int64_t> ParseHttpDate(std::string_view text);

// Listing ETags carry no quotes, header ETags do; stored ETags always do.
std::string QuoteEtag(std::string_view etag);

// Total size from "bytes 0-4/11" or "bytes */11"; nullopt when absent or '*'.
std::optional<uint64_t> ParseContentRangeTotal(std::string_view content_range);

// Decimal unsigned integer occupying the whole text.
std::optional<uint64_t> ParseUint64(std::string_view text);

}  // namespace stampfs
