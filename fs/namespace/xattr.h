// Extended attributes live in one Binary entity property "xattr":
// repeated [u32 name length][name][u32 value length][value], little-endian.
// The whole set is limited by the 64 KiB binary property limit.
#pragma once

#include <map>
#include <string>

#include "storage/status.h"

namespace stampfs {

using XattrMap = std::map<std::string, std::string>;

std::string EncodeXattrs(const XattrMap& xattrs);
Result<XattrMap> DecodeXattrs(const std::string& bytes);

}  // namespace stampfs
