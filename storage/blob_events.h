// Event Grid blob events as its storage-queue destination delivers them
// (AZURE-NOTES.md "Queue service and Event Grid blob events"): one event per
// message, its JSON base64-encoded (plain JSON is read too), in the Event
// Grid schema or the CloudEvents 1.0 schema. An event is a hint about one
// blob, never the truth: at least once, unordered, late, or forged by
// whoever may write the queue. Its reader reads the blob before acting.
#pragma once

#include <cstdint>
#include <string>

#include "storage/status.h"

namespace stampfs {

struct BlobEvent {
  enum class Kind { kCreated, kDeleted };
  Kind kind = Kind::kCreated;
  std::string container;
  std::string blob;       // the name, as the subject carries it
  std::string etag;       // data.eTag: the version the event is about ("" for a delete)
  std::string sequencer;  // data.sequencer: orders the events of one blob
  std::string api;        // data.api: PutBlob, PutBlockList, CopyBlob, DeleteBlob, ...
  uint64_t content_length = 0;
  std::string id;  // the event's id (duplicates share it)
};

// kNotSupported: an event of another type (not about blobs being created
// or deleted): nothing to do. kInvalidArgument: not an event at all.
Result<BlobEvent> ParseBlobEventMessage(const std::string& message_text);

// Orders two sequencers of one blob (<0: a happened before b): Azure
// documents a plain string comparison for events of one blob name.
int CompareSequencers(const std::string& a, const std::string& b);

}  // namespace stampfs
