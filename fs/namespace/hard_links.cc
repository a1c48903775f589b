#include "fs/namespace/hard_links.h"

#include <algorithm>
#include <cstdio>

#include "fs/namespace/names.h"

namespace stampfs {

std::string InodeRowKey(uint64_t ino) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(ino));
  return buf;
}

std::string LinkBlobPath(uint64_t ino) { return "/.stampfs-links/" + std::to_string(ino); }

bool IsLinkName(const Entity& entry) {
  return entry.partition_key != kInodesPartition && entry.GetInt64(kLinkedProperty) != 0;
}

std::vector<std::string> LinkPaths(const Entity& record) {
  const Binary* b = record.GetBinary(kLinkPathsProperty);
  return b ? SplitFields(b->bytes, '\0') : std::vector<std::string>{};
}

void SetLinkPaths(const std::vector<std::string>& paths, Entity* record) {
  std::string joined;
  for (const std::string& p : paths) {
    if (!joined.empty()) joined.push_back('\0');
    joined += p;
  }
  record->properties[kLinkPathsProperty] = Binary{joined};
}

void AddLinkPath(const std::string& path, Entity* record) {
  auto paths = LinkPaths(*record);
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  SetLinkPaths(paths, record);
}

void RemoveLinkPath(const std::string& path, Entity* record) {
  auto paths = LinkPaths(*record);
  paths.erase(std::remove(paths.begin(), paths.end(), path), paths.end());
  SetLinkPaths(paths, record);
}

}  // namespace stampfs
