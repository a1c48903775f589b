#include "fs/namespace/dir_marker.h"

#include <strings.h>

#include "fs/namespace/blob_times.h"
#include "fs/namespace/inode_table.h"

namespace stampfs {

namespace {

constexpr char kFolderKey[] = "hdi_isfolder";

// A marker that is not there (never written, or already moved or removed).
Result<BlobProperties> ReadMarker(BlobStore& blobs, const std::string& container,
                                  const std::string& blob) {
  auto props = blobs.GetProperties(container, blob);
  if (!props.ok()) return props.status();
  if (!IsDirMarkerBlob(*props)) {
    return Status(Code::kAlreadyExists, blob + " is a blob that is not a directory marker");
  }
  return props;
}

}  // namespace

bool IsDirMarkerBlob(const BlobProperties& props) {
  if (props.size != 0) return false;
  for (const auto& [key, value] : props.metadata) {
    if (strcasecmp(key.c_str(), kFolderKey) == 0) return strcasecmp(value.c_str(), "true") == 0;
  }
  return false;
}

Status WriteDirMarker(BlobStore& blobs, const std::string& container, const std::string& path,
                      const Attr& attr) {
  const BlobMetadata meta{{kFolderKey, "true"},
                          {"mode", std::to_string(attr.mode)},
                          {"uid", std::to_string(attr.uid)},
                          {"gid", std::to_string(attr.gid)},
                          {"mtime", FormatBlobMtime(attr.mtime_ns)},
                          {"stampfs", "1"}};  // a mount's own: fs/admin/dir_refresh.h
  const std::string blob = BlobNameFor(path);
  if (IsLongPathBlob(blob)) return Status::Ok();  // a long path has no marker
  auto put = blobs.PutString(container, blob, "", meta, Condition::IfNoneMatchAny());
  if (!put.status().Is(Code::kAlreadyExists)) return put.status();
  return ReadMarker(blobs, container, blob).status();  // ours from a resent request, or another's
}

Status RemoveDirMarker(BlobStore& blobs, const std::string& container, const std::string& path) {
  const std::string blob = BlobNameFor(path);
  if (IsLongPathBlob(blob)) return Status::Ok();
  auto marker = ReadMarker(blobs, container, blob);
  if (marker.status().Is(Code::kNotFound)) return Status::Ok();
  STAMPFS_RETURN_IF_ERROR(marker);
  Status s = blobs.Delete(container, blob, Condition::IfMatch(marker->etag));
  return s.Is(Code::kNotFound) ? Status::Ok() : s;
}

Status MoveDirMarker(BlobStore& blobs, const std::string& container, const std::string& from,
                     const std::string& to) {
  const std::string old_blob = BlobNameFor(from);
  if (IsLongPathBlob(old_blob)) return Status::Ok();  // none to move
  auto marker = ReadMarker(blobs, container, old_blob);
  if (marker.status().Is(Code::kNotFound)) return Status::Ok();
  STAMPFS_RETURN_IF_ERROR(marker);
  auto copied = IsLongPathBlob(BlobNameFor(to))
                    ? Result<std::string>(std::string())
                    : blobs.Copy(container, old_blob, BlobNameFor(to), Condition::IfNoneMatchAny(),
                                 marker->etag);
  if (copied.status().Is(Code::kAlreadyExists)) {
    // An earlier run's copy, or the marker of an empty directory this one replaced.
    STAMPFS_RETURN_IF_ERROR(ReadMarker(blobs, container, BlobNameFor(to)));
  } else if (copied.status().Is(Code::kPreconditionFailed)) {
    return Status::Ok();  // the old marker changed or went meanwhile: not ours to move
  } else {
    STAMPFS_RETURN_IF_ERROR(copied);
  }
  Status s = blobs.Delete(container, old_blob, Condition::IfMatch(marker->etag));
  return s.Is(Code::kNotFound) || s.Is(Code::kPreconditionFailed) ? Status::Ok() : s;
}

}  // namespace stampfs
