// The account integration tests run against: $AZURE_STORAGE_CONNECTION_STRING
// (scripts/test sets it for non-default Azurite ports), else the local
// Azurite's development account.
#pragma once

#include <cstdlib>

#include "storage/connection_string.h"

namespace stampfs {

inline Result<StorageAccount> Account() {
  const char* env = std::getenv("AZURE_STORAGE_CONNECTION_STRING");
  return ParseConnectionString(env != nullptr && *env != '\0' ? env : kDevelopmentConnectionString);
}

}  // namespace stampfs
