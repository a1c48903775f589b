#include "cache/entity_codec.h"

#include <bit>
#include <cstdint>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>

namespace stampfs {
namespace {

constexpr uint8_t kFormat = 1;

// Stable on disk: never renumber, only add.
enum Tag : uint8_t {
  kTagString = 1,
  kTagInt64 = 2,
  kTagInt32 = 3,
  kTagBool = 4,
  kTagDouble = 5,
  kTagBinary = 6
};

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutFixed(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutBytes(std::string* out, const std::string& bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes);
}

void PutValue(std::string* out, const PropertyValue& value) {
  std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out->push_back(static_cast<char>(kTagString));
          PutBytes(out, v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out->push_back(static_cast<char>(kTagInt64));
          PutFixed(out, static_cast<uint64_t>(v), 8);
        } else if constexpr (std::is_same_v<T, int32_t>) {
          out->push_back(static_cast<char>(kTagInt32));
          PutFixed(out, static_cast<uint32_t>(v), 4);
        } else if constexpr (std::is_same_v<T, bool>) {
          out->push_back(static_cast<char>(kTagBool));
          out->push_back(v ? 1 : 0);
        } else if constexpr (std::is_same_v<T, double>) {
          out->push_back(static_cast<char>(kTagDouble));
          PutFixed(out, std::bit_cast<uint64_t>(v), 8);
        } else {
          static_assert(std::is_same_v<T, Binary>);
          out->push_back(static_cast<char>(kTagBinary));
          PutBytes(out, v.bytes);
        }
      },
      value);
}

// Bounds-checked cursor over an encoding: every read fails rather than run
// past the end.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : data_(bytes.data()), left_(bytes.size()) {}

  bool done() const { return left_ == 0; }

  bool Byte(uint8_t* b) {
    if (left_ == 0) return false;
    *b = static_cast<uint8_t>(*data_++);
    --left_;
    return true;
  }

  // LEB128, at most 10 bytes, minimal length.
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      if (shift == 63 && (b & 0x7e) != 0) return false;  // over 64 bits
      if (shift > 0 && b == 0) return false;             // overlong: one encoding only
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  bool Fixed(int bytes, uint64_t* v) {
    if (left_ < static_cast<size_t>(bytes)) return false;
    uint64_t result = 0;
    for (int i = 0; i < bytes; ++i) {
      result |= static_cast<uint64_t>(static_cast<uint8_t>(data_[i])) << (8 * i);
    }
    data_ += bytes;
    left_ -= bytes;
    *v = result;
    return true;
  }

  // A varint length, then that many bytes (which must all be present).
  bool Bytes(std::string* out) {
    uint64_t n;
    if (!Varint(&n) || n > left_) return false;
    out->assign(data_, static_cast<size_t>(n));
    data_ += n;
    left_ -= n;
    return true;
  }

 private:
  const char* data_;
  size_t left_;
};

Status Corrupt(const std::string& what) {
  return Status(Code::kCorruption, "cached entity properties: " + what);
}

Status ReadValue(Reader* in, PropertyValue* value) {
  uint8_t tag;
  if (!in->Byte(&tag)) return Corrupt("truncated type tag");
  uint64_t u = 0;
  switch (tag) {
    case kTagString: {
      std::string s;
      if (!in->Bytes(&s)) return Corrupt("truncated string");
      *value = std::move(s);
      return Status::Ok();
    }
    case kTagBinary: {
      Binary b;
      if (!in->Bytes(&b.bytes)) return Corrupt("truncated binary");
      *value = std::move(b);
      return Status::Ok();
    }
    case kTagInt64:
      if (!in->Fixed(8, &u)) return Corrupt("truncated int64");
      *value = static_cast<int64_t>(u);
      return Status::Ok();
    case kTagInt32:
      if (!in->Fixed(4, &u)) return Corrupt("truncated int32");
      *value = static_cast<int32_t>(static_cast<uint32_t>(u));
      return Status::Ok();
    case kTagDouble:
      if (!in->Fixed(8, &u)) return Corrupt("truncated double");
      *value = std::bit_cast<double>(u);
      return Status::Ok();
    case kTagBool:
      if (!in->Fixed(1, &u)) return Corrupt("truncated bool");
      if (u > 1) return Corrupt("bool that is neither 0 nor 1");
      *value = (u == 1);
      return Status::Ok();
    default:
      return Corrupt("unknown type tag " + std::to_string(tag));
  }
}

}  // namespace

std::string EncodeProperties(const Entity& entity) {
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  PutVarint(&out, entity.properties.size());
  for (const auto& [name, value] : entity.properties) {
    PutBytes(&out, name);
    PutValue(&out, value);
  }
  return out;
}

Status DecodeProperties(const std::string& bytes, Entity* entity) {
  if (entity == nullptr) return Status(Code::kInvalidArgument, "DecodeProperties: null entity");
  Reader in(bytes);
  uint8_t format;
  if (!in.Byte(&format)) return Corrupt("empty");
  if (format != kFormat) return Corrupt("unknown format " + std::to_string(format));
  uint64_t count;
  if (!in.Varint(&count)) return Corrupt("truncated property count");
  std::map<std::string, PropertyValue> properties;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name;
    if (!in.Bytes(&name)) return Corrupt("truncated property name");
    if (!properties.empty() && name <= properties.rbegin()->first) {
      return Corrupt("property names out of order or repeated");
    }
    PropertyValue value;
    STAMPFS_RETURN_IF_ERROR(ReadValue(&in, &value));
    properties.emplace_hint(properties.end(), std::move(name), std::move(value));
  }
  if (!in.done()) return Corrupt("trailing bytes");
  entity->properties = std::move(properties);
  return Status::Ok();
}

}  // namespace stampfs
