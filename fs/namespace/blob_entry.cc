#include "fs/namespace/blob_entry.h"

#include <strings.h>

#include "fs/namespace/attr.h"
#include "fs/namespace/blob_times.h"

namespace stampfs {

const std::string* BlobMeta(const BlobItem& b, const std::string& name) {
  for (const auto& [k, v] : b.properties.metadata) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return &v;
  }
  return nullptr;
}

int64_t BlobMtimeNs(const BlobItem& b) {
  if (const std::string* v = BlobMeta(b, "mtime")) {
    if (auto t = ParseBlobMtime(*v)) return *t;
  }
  return b.properties.last_modified * 1000000000LL;
}

bool WrittenByStampfs(const BlobItem& b) { return BlobMeta(b, "stampfs") != nullptr; }

void SetBlobProperties(const BlobItem& b, Entity* e) {
  e->properties["blob"] = b.name;
  e->properties["betag"] = b.properties.etag;
  e->properties.erase(kMovedFromProperty);  // a version read from the listing
  if (auto bs = BlobMetaNumber<int64_t>(b, "bsize"); bs && *bs > 0) e->properties["bsize"] = *bs;
}

}  // namespace stampfs
