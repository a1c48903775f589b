// Directory marker blobs (-o dir_markers): blobfuse's convention, which
// Storage Explorer, blobfuse2 and rclone read: a zero-length blob named by
// the directory's path (BlobNameFor) with metadata hdi_isfolder=true, so
// other tools see a directory with no files below it. A directory whose
// path is too long for a blob name (BlobNameFor hashes it) has none. The table stays the
// truth for stampfs; a marker is only for them. Every write is conditional,
// and a blob that is not a marker is never deleted or replaced.
#pragma once

#include <string>

#include "fs/namespace/attr.h"
#include "storage/blob_store.h"

namespace stampfs {

// Zero length and hdi_isfolder=true (any case).
bool IsDirMarkerBlob(const BlobProperties& props);

// The marker of directory `path` ("/a/b"), with its mode, owner and mtime
// (import reads them back). One already there is kept.
Status WriteDirMarker(BlobStore& blobs, const std::string& container, const std::string& path,
                      const Attr& attr);
// Deletes the marker of `path` (If-Match the ETag read); none there is OK.
Status RemoveDirMarker(BlobStore& blobs, const std::string& container, const std::string& path);
// The marker of `from` moves to `to` (a server-side copy pinned to the
// version read, then the old one deleted If-Match it). Idempotent: after an
// interrupted run the old one is gone or still a marker, so running it
// again finishes it.
Status MoveDirMarker(BlobStore& blobs, const std::string& container, const std::string& from,
                     const std::string& to);

}  // namespace stampfs
