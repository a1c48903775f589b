#include "storage/blob_events.h"

#include <nlohmann/json.hpp>

#include "storage/auth.h"

namespace stampfs {
namespace {

using nlohmann::json;

constexpr const char* kSubjectPrefix = "/blobServices/default/containers/";

Status Invalid(const std::string& why) {
  return Status(Code::kInvalidArgument, "not a blob event: " + why);
}

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<BlobEvent> ParseBlobEventMessage(const std::string& message_text) {
  std::string text = message_text;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Invalid("an empty message");
  if (text[first] != '{' && text[first] != '[') {
    auto decoded = Base64Decode(text.substr(first));
    if (!decoded.ok()) return Invalid("neither JSON nor base64");
    text = *decoded;
  }
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Invalid("the JSON does not parse");
  if (doc.is_array()) {
    if (doc.size() != 1) return Invalid("an array of " + std::to_string(doc.size()) + " events");
    doc = doc[0];
  }
  if (!doc.is_object()) return Invalid("the JSON is not an object");
  // Event Grid schema: eventType; CloudEvents 1.0: type (and specversion).
  std::string type = StringAt(doc, "eventType");
  if (type.empty()) type = StringAt(doc, "type");
  if (type.empty()) return Invalid("no eventType or type");
  BlobEvent e;
  if (type == "Microsoft.Storage.BlobCreated") {
    e.kind = BlobEvent::Kind::kCreated;
  } else if (type == "Microsoft.Storage.BlobDeleted") {
    e.kind = BlobEvent::Kind::kDeleted;
  } else {
    return Status(Code::kNotSupported, "event type " + type + " is not a blob change");
  }
  const std::string subject = StringAt(doc, "subject");
  if (subject.rfind(kSubjectPrefix, 0) != 0) return Invalid("subject " + subject);
  const std::string rest = subject.substr(std::string(kSubjectPrefix).size());
  const size_t blobs = rest.find("/blobs/");
  if (blobs == std::string::npos || blobs == 0) return Invalid("subject " + subject);
  e.container = rest.substr(0, blobs);
  e.blob = rest.substr(blobs + 7);
  if (e.blob.empty()) return Invalid("subject " + subject + " names no blob");
  e.id = StringAt(doc, "id");
  auto data = doc.find("data");
  if (data != doc.end() && data->is_object()) {
    e.etag = StringAt(*data, "eTag");
    e.sequencer = StringAt(*data, "sequencer");
    e.api = StringAt(*data, "api");
    auto length = data->find("contentLength");
    if (length != data->end() && length->is_number_unsigned()) {
      e.content_length = length->get<uint64_t>();
    }
  }
  return e;
}

int CompareSequencers(const std::string& a, const std::string& b) {
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace stampfs
