// The modification time in blob metadata "mtime", in the form other tools
// read: rclone's azureblob backend writes and reads RFC 3339 with
// nanoseconds there ("2026-12-03T11:16:21.123456789Z"); stampfs before it
// wrote decimal nanoseconds, which rclone showed as 0001-01-01.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stampfs {

// RFC 3339 in UTC with nine fractional digits, as rclone writes it.
std::string FormatBlobMtime(int64_t ns);

// Nanoseconds since the epoch from "mtime" as the tools write it:
// RFC 3339 (any fraction, "Z" or an offset), stampfs's older decimal
// nanoseconds (more than 12 digits), or Unix seconds with an optional
// fraction (rclone's S3 and Swift form, s3fs). nullopt when it is none.
std::optional<int64_t> ParseBlobMtime(const std::string& text);

}  // namespace stampfs
