// chmod, chown and utimens of a file with a committed blob that no open file
// of this mount will commit again: the blob's metadata (mode, uid, gid,
// mtime, as each commit writes them) follows the entry, so other tools
// (rclone, azcopy) and an import see the same attributes.
//
// Protocol: read the entry fresh (blob ETag E0); read the blob's properties:
// only when the blob is still at E0 is its metadata replaced (Set Blob
// Metadata If-Match E0, every other key kept), giving E1; then the entry
// merge records the attributes and betag E1 in one transaction, If-Match the
// entry, and only while the entry still names E0. A crash between the two
// leaves an entry naming E0 and a blob at E1 carrying the new mtime: the next
// access adopts it (fs/data/file_recovery.cc), as after any commit. A blob at
// another version than the entry names is left alone (its own commit or an
// adoption will update the entry). An answer that does not say whether the
// metadata landed is resolved by reading the blob again.
#include <strings.h>
#include <sys/stat.h>

#include "fs/namespace/blob_times.h"
#include "fs/namespace/namespace.h"

namespace stampfs {

namespace {

bool ChangesBlobMetadata(const SetAttrRequest& req) {
  return req.mode || req.uid || req.gid || req.mtime_ns;
}

// `meta` with the attributes `req` changes (mode with its type bits, as
// commits write it); false when nothing differs.
bool ApplyToMetadata(const Attr& before, const SetAttrRequest& req, BlobMetadata* meta) {
  const BlobMetadata old = *meta;
  if (req.mode) (*meta)["mode"] = std::to_string((before.mode & S_IFMT) | (*req.mode & 07777));
  if (req.uid) (*meta)["uid"] = std::to_string(*req.uid);
  if (req.gid) (*meta)["gid"] = std::to_string(*req.gid);
  if (req.mtime_ns) {
    for (auto it = meta->begin(); it != meta->end();) {  // names are case-insensitive ("Mtime")
      it = strcasecmp(it->first.c_str(), "mtime") == 0 ? meta->erase(it) : std::next(it);
    }
    (*meta)["mtime"] = FormatBlobMtime(*req.mtime_ns);
  }
  return *meta != old;
}

}  // namespace

// The blob's new ETag, or "" when the blob was left as it is.
std::string Namespace::SyncBlobAttrs(const FileState& st, const SetAttrRequest& req) {
  auto props = blobs_.GetProperties(options_.container, st.blob);
  if (!props.ok() || props->etag != st.blob_etag) return "";
  BlobMetadata meta = props->metadata;
  if (!ApplyToMetadata(st.attr, req, &meta)) return "";
  auto set =
      blobs_.SetMetadata(options_.container, st.blob, meta, Condition::IfMatch(st.blob_etag));
  if (set.ok()) return *set;
  if (set.status().Is(Code::kPreconditionFailed) || set.status().Is(Code::kNotFound)) return "";
  // Unknown outcome (timeout, 5xx, cut connection): what is stored decides.
  auto now = blobs_.GetProperties(options_.container, st.blob);
  if (now.ok() && now->etag != st.blob_etag && now->metadata == meta) return now->etag;
  return "";
}

Result<Attr> Namespace::SetAttrWithBlob(uint64_t ino, const SetAttrRequest& req,
                                        BlobVersionChange* change) {
  if (options_.read_only) return Status(Code::kReadOnly, "read-only mount");
  if (!ChangesBlobMetadata(req) || IsPending(ino)) return SetAttr(ino, req);
  std::shared_lock<std::shared_mutex> not_renaming(blob_attrs_mu_);
  auto kind = GetAttr(ino);  // cached: directories and symlinks have no blob
  if (!kind.ok() || !kind->IsRegular()) return SetAttr(ino, req);
  auto st = GetFile(ino, true);
  if (!st.ok() || !st->attr.IsRegular() || st->blob.empty() || st->blob_etag.empty()) {
    return SetAttr(ino, req);
  }
  const std::string new_etag = SyncBlobAttrs(*st, req);
  if (new_etag.empty()) return SetAttr(ino, req);
  auto e = MergeEntry(ino, [&](Entity* entity) -> Status {
    STAMPFS_RETURN_IF_ERROR(ApplySetAttr(req, entity));
    const std::string* betag = entity->GetString("betag");
    if (betag && *betag == st->blob_etag) entity->properties["betag"] = new_etag;
    return Status::Ok();
  });
  STAMPFS_RETURN_IF_ERROR(e);
  const std::string* betag = e->GetString("betag");
  if (change && betag && *betag == new_etag) *change = {st->blob, st->blob_etag, new_etag};
  return AttrFromEntity(*e);
}

}  // namespace stampfs
