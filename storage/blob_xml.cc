#include "storage/blob_xml.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cstring>
#include <pugixml.hpp>

#include "storage/http.h"

namespace stampfs {
namespace {

// Whitespace-only text is kept when it is an element's only child, so a blob
// named " " survives; BOM-prefixed (Azure) and plain (Azurite) bodies both load.
constexpr unsigned kParseOptions = pugi::parse_default | pugi::parse_ws_pcdata_single;

bool Load(pugi::xml_document& doc, std::string_view body) {
  return static_cast<bool>(
      doc.load_buffer(body.data(), body.size(), kParseOptions, pugi::encoding_auto));
}

Status Corrupt(const std::string& what) {
  return Status(Code::kCorruption, "unparseable " + what + " XML from the Blob service");
}

// The text of a name element, percent-decoded when the service flagged it
// (Azure encodes names that contain characters XML cannot carry).
std::string NameText(const pugi::xml_node& name) {
  std::string text = name.text().get();
  if (std::strcmp(name.attribute("Encoded").value(), "true") == 0) return UrlDecode(text);
  return text;
}

Result<BlobItem> ParseBlob(const pugi::xml_node& node) {
  pugi::xml_node name = node.child("Name");
  if (!name) return Corrupt("listing (a Blob without Name)");
  BlobItem item;
  item.name = NameText(name);
  pugi::xml_node props = node.child("Properties");
  auto size = ParseUint64(props.child("Content-Length").text().get());
  if (!size) return Corrupt("listing (Content-Length of " + item.name + ")");
  item.properties.size = *size;
  item.properties.etag = QuoteEtag(props.child("Etag").text().get());
  item.properties.content_type = props.child("Content-Type").text().get();
  item.properties.content_md5 = props.child("Content-MD5").text().get();
  if (auto modified = ParseHttpDate(props.child("Last-Modified").text().get())) {
    item.properties.last_modified = *modified;
  }
  for (pugi::xml_node meta : node.child("Metadata").children()) {
    if (meta.type() != pugi::node_element) continue;
    item.properties.metadata[meta.name()] = meta.text().get();
  }
  return item;
}

Result<std::vector<BlockInfo>> ParseBlocks(const pugi::xml_node& parent) {
  std::vector<BlockInfo> blocks;
  for (pugi::xml_node block : parent.children("Block")) {
    auto size = ParseUint64(block.child("Size").text().get());
    if (!block.child("Name") || !size) return Corrupt("block list (a Block)");
    blocks.push_back({block.child("Name").text().get(), *size});
  }
  return blocks;
}

void AppendEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
}

const char* SourceTag(BlockRef::Source source) {
  switch (source) {
    case BlockRef::Source::kCommitted:
      return "Committed";
    case BlockRef::Source::kUncommitted:
      return "Uncommitted";
    case BlockRef::Source::kLatest:
      return "Latest";
  }
  return "Latest";
}

std::optional<int> MonthNumber(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return static_cast<int>(i) + 1;
  }
  return std::nullopt;
}

// Parses exactly `width` digits at text[*pos] and advances past them.
std::optional<int> Digits(std::string_view text, size_t* pos, size_t width) {
  if (*pos + width > text.size()) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data() + *pos, text.data() + *pos + width, value);
  if (ec != std::errc() || end != text.data() + *pos + width || value < 0) return std::nullopt;
  *pos += width;
  return value;
}

bool Expect(std::string_view text, size_t* pos, std::string_view literal) {
  if (text.substr(*pos, literal.size()) != literal) return false;
  *pos += literal.size();
  return true;
}

}  // namespace

Result<BlobListing> ParseBlobListingXml(std::string_view body) {
  pugi::xml_document doc;
  if (!Load(doc, body)) return Corrupt("listing");
  pugi::xml_node root = doc.child("EnumerationResults");
  if (!root) return Corrupt("listing (no EnumerationResults)");
  BlobListing listing;
  for (pugi::xml_node node : root.child("Blobs").children()) {
    if (std::strcmp(node.name(), "Blob") == 0) {
      auto item = ParseBlob(node);
      if (!item.ok()) return item.status();
      listing.blobs.push_back(std::move(item).value());
    } else if (std::strcmp(node.name(), "BlobPrefix") == 0) {
      pugi::xml_node name = node.child("Name");
      if (!name) return Corrupt("listing (a BlobPrefix without Name)");
      listing.prefixes.push_back(NameText(name));
    }
  }
  listing.next_marker = root.child("NextMarker").text().get();
  return listing;
}

Result<BlockList> ParseBlockListXml(std::string_view body) {
  pugi::xml_document doc;
  if (!Load(doc, body)) return Corrupt("block list");
  pugi::xml_node root = doc.child("BlockList");
  if (!root) return Corrupt("block list (no BlockList)");
  BlockList list;
  auto committed = ParseBlocks(root.child("CommittedBlocks"));
  if (!committed.ok()) return committed.status();
  auto uncommitted = ParseBlocks(root.child("UncommittedBlocks"));
  if (!uncommitted.ok()) return uncommitted.status();
  list.committed = std::move(committed).value();
  list.uncommitted = std::move(uncommitted).value();
  return list;
}

Result<std::vector<QueueMessage>> ParseQueueMessagesXml(std::string_view body) {
  pugi::xml_document doc;
  if (!Load(doc, body)) return Corrupt("queue messages (not XML)");
  pugi::xml_node list = doc.child("QueueMessagesList");
  if (!list) return Corrupt("queue messages (no QueueMessagesList)");
  std::vector<QueueMessage> out;
  for (pugi::xml_node m : list.children("QueueMessage")) {
    QueueMessage q;
    q.id = m.child("MessageId").text().as_string();
    q.pop_receipt = m.child("PopReceipt").text().as_string();
    q.dequeue_count = m.child("DequeueCount").text().as_llong();
    q.text = m.child("MessageText").text().as_string();
    if (q.id.empty()) return Corrupt("queue messages (a message without an id)");
    out.push_back(std::move(q));
  }
  return out;
}

std::string BuildQueueMessageXml(std::string_view text) {
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessage><MessageText>";
  AppendEscaped(out, text);
  return out + "</MessageText></QueueMessage>";
}

std::string BuildBlockListXml(const std::vector<BlockRef>& blocks) {
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<BlockList>";
  for (const BlockRef& block : blocks) {
    const char* tag = SourceTag(block.source);
    out += "<";
    out += tag;
    out += ">";
    AppendEscaped(out, block.id);
    out += "</";
    out += tag;
    out += ">";
  }
  out += "</BlockList>\n";
  return out;
}

std::optional<ServiceError> ParseErrorXml(std::string_view body) {
  pugi::xml_document doc;
  if (!Load(doc, body)) return std::nullopt;
  pugi::xml_node root = doc.child("Error");
  if (!root) return std::nullopt;
  return ServiceError{root.child("Code").text().get(), root.child("Message").text().get()};
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  // "Www, DD Mon YYYY HH:MM:SS GMT"
  size_t pos = 0;
  if (text.size() < 5 || text[3] != ',') return std::nullopt;
  pos = 4;
  if (!Expect(text, &pos, " ")) return std::nullopt;
  auto day = Digits(text, &pos, 2);
  if (!day || !Expect(text, &pos, " ") || pos + 3 > text.size()) return std::nullopt;
  auto month = MonthNumber(text.substr(pos, 3));
  pos += 3;
  if (!month || !Expect(text, &pos, " ")) return std::nullopt;
  auto year = Digits(text, &pos, 4);
  if (!year || !Expect(text, &pos, " ")) return std::nullopt;
  auto hour = Digits(text, &pos, 2);
  if (!hour || !Expect(text, &pos, ":")) return std::nullopt;
  auto minute = Digits(text, &pos, 2);
  if (!minute || !Expect(text, &pos, ":")) return std::nullopt;
  auto second = Digits(text, &pos, 2);
  if (!second || !Expect(text, &pos, " GMT") || pos != text.size()) return std::nullopt;
  std::chrono::year_month_day date{std::chrono::year(*year),
                                   std::chrono::month(static_cast<unsigned>(*month)),
                                   std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return days * 86400 + *hour * 3600 + *minute * 60 + *second;
}

std::string QuoteEtag(std::string_view etag) {
  if (etag.empty() || etag.front() == '"' || etag.substr(0, 2) == "W/") return std::string(etag);
  std::string quoted;  // appends, not a + b + c: GCC 12 -O3 -Wrestrict false positive
  quoted.reserve(etag.size() + 2);
  quoted.push_back('"');
  quoted.append(etag);
  quoted.push_back('"');
  return quoted;
}

std::optional<uint64_t> ParseContentRangeTotal(std::string_view content_range) {
  size_t slash = content_range.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return ParseUint64(content_range.substr(slash + 1));
}

std::optional<uint64_t> ParseUint64(std::string_view text) {
  uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace stampfs
