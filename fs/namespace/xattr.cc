#include "fs/namespace/xattr.h"

#include <cstdint>

namespace stampfs {

namespace {

void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool GetU32(const std::string& in, size_t* pos, uint32_t* v) {
  if (in.size() - *pos < 4) return false;
  *v = 0;
  for (int i = 0; i < 4; ++i) {
    *v |= static_cast<uint32_t>(static_cast<unsigned char>(in[*pos + i])) << (8 * i);
  }
  *pos += 4;
  return true;
}

bool GetBytes(const std::string& in, size_t* pos, std::string* out) {
  uint32_t len;
  if (!GetU32(in, pos, &len) || in.size() - *pos < len) return false;
  *out = in.substr(*pos, len);
  *pos += len;
  return true;
}

}  // namespace

std::string EncodeXattrs(const XattrMap& xattrs) {
  std::string out;
  for (const auto& [name, value] : xattrs) {
    PutU32(static_cast<uint32_t>(name.size()), &out);
    out += name;
    PutU32(static_cast<uint32_t>(value.size()), &out);
    out += value;
  }
  return out;
}

Result<XattrMap> DecodeXattrs(const std::string& bytes) {
  XattrMap out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    std::string name, value;
    if (!GetBytes(bytes, &pos, &name) || !GetBytes(bytes, &pos, &value)) {
      return Status(Code::kCorruption, "malformed xattr property");
    }
    out[name] = value;
  }
  return out;
}

}  // namespace stampfs
