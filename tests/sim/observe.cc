#include "tests/sim/observe.h"

#include "fs/namespace/attr.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "fs/namespace/table_scan.h"
#include "tests/sim/world.h"

namespace stampfs::sim {

bool IsConflictCopyName(const std::string& name) {
  return name.find(".conflict-") != std::string::npos;
}

const ObservedEntry* Snapshot::Ino(uint64_t ino) const {
  auto it = path_of.find(ino);
  return it == path_of.end() ? nullptr : &by_path.at(it->second);
}

std::vector<const ObservedEntry*> Snapshot::ConflictCopies() const {
  std::vector<const ObservedEntry*> out;
  for (const auto& [path, e] : by_path) {
    if (S_ISREG(e.mode) && IsConflictCopyName(BaseName(path))) out.push_back(&e);
  }
  return out;
}

Snapshot Observe(TableStore& table, BlobStore& blobs) {
  Snapshot snap;
  auto scan = ScanTable(table, kTable);
  if (!scan.ok()) {
    snap.error = "table scan: " + scan.status().ToString();
    return snap;
  }
  auto listing = blobs.ListBlobs(kContainer, {});
  if (!listing.ok()) {
    snap.error = "blob listing: " + listing.status().ToString();
    return snap;
  }
  for (const BlobItem& b : listing->blobs) {
    auto data = blobs.ReadToString(kContainer, b.name);
    snap.blobs[b.name] = data.ok() ? *data : "<unreadable " + data.status().ToString() + ">";
  }
  for (const Entity& row : scan->other) {
    if (row.partition_key == kIntentsPartition) snap.intents++;
  }
  for (const auto& [pk, part] : scan->partitions) {
    for (const auto& [rk, entity] : part.entries) {
      auto name = NameOfEntry(entity);
      auto attr = AttrFromEntity(entity);
      if (!name.ok() || !attr.ok() || part.path.empty()) continue;  // fsck reports these
      ObservedEntry e;
      e.path = JoinPath(part.path, *name);
      e.ino = attr->ino;
      e.mode = attr->mode;
      e.size = attr->size;
      if (const std::string* b = entity.GetString("blob")) e.blob = *b;
      if (const std::string* b = entity.GetString("betag")) e.betag = *b;
      if (const Binary* t = entity.GetBinary("target")) e.target = t->bytes;
      // An entry naming no committed version (betag "": inserted before its
      // first commit) holds no data, whatever blob has its name meanwhile (a
      // file unlinked while open keeps its blob until the last close).
      if (attr->IsRegular() && !e.betag.empty()) {
        auto it = snap.blobs.find(e.blob.empty() ? BlobNameFor(e.path) : e.blob);
        if (it != snap.blobs.end()) {
          e.content = it->second;
        } else {
          e.blob_missing = !e.betag.empty();
        }
      }
      snap.path_of[e.ino] = e.path;
      snap.by_path[e.path] = std::move(e);
    }
  }
  snap.ok = true;
  return snap;
}

}  // namespace stampfs::sim
