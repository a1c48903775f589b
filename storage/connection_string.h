// Azure Storage connection strings and the account they describe.
#pragma once

#include <memory>
#include <string>

#include "storage/status.h"

namespace stampfs {

class TokenCredential;

// What a client needs to reach one storage account. Endpoints carry no
// trailing slash; for the emulator they include the account path segment
// (http://127.0.0.1:10000/devstoreaccount1), for Azure they do not
// (https://acct.blob.core.windows.net).
struct StorageAccount {
  std::string account_name;
  std::string account_key;  // base64 as given; empty when a SAS is used. Never log.
  std::string sas_token;    // without a leading '?'; empty with a key. Never log.
  // The table's own SAS when sas_token is a container SAS (which the Table
  // service does not take); empty: sas_token signs both. Never log.
  std::string table_sas_token;
  std::string blob_endpoint;
  std::string table_endpoint;
  // Change events (-o events, storage/queue_store.h); a connection string
  // without QueueEndpoint gets https://ACCOUNT.queue.SUFFIX.
  std::string queue_endpoint;
  // Microsoft Entra ID: bearer tokens for both services (token_credential.h),
  // set when there is neither key nor SAS.
  std::shared_ptr<TokenCredential> token_credential;
  // A private CA bundle for https (curl's CAINFO); empty: the system's.
  std::string ca_file;

  bool HasKey() const { return !account_key.empty(); }
  bool HasSas() const { return !sas_token.empty(); }
  bool HasToken() const { return token_credential != nullptr; }
  // "devstoreaccount1 (blob http://..., table http://..., SharedKey)": no secret.
  std::string Describe() const;
};

// The Azure convention used when nothing else is configured.
inline constexpr const char* kDevelopmentConnectionString = "UseDevelopmentStorage=true";

// Parses Key=Value;... (keys case-insensitive, each pair split on its first
// '='). Understands UseDevelopmentStorage, DefaultEndpointsProtocol,
// AccountName, AccountKey, BlobEndpoint, TableEndpoint, QueueEndpoint,
// FileEndpoint, EndpointSuffix, SharedAccessSignature. Errors name the field
// at fault and never echo a key or signature.
Result<StorageAccount> ParseConnectionString(const std::string& text);

// Plain http only to a loopback host (the emulator) unless `allow_http`:
// anywhere else a key-signed request or a SAS would cross the network in the
// clear. (https always verifies the peer certificate: curl_transport.cc.)
Status CheckEndpointsSecure(const StorageAccount& account, bool allow_http);  // blob, table
Status CheckEndpointSecure(const std::string& endpoint, bool allow_http);     // one (the queue's)

// An endpoint that names the account in its path (an IP or dotless host:
// the emulator), not in its host name (Azure).
bool IsPathStyleEndpoint(const std::string& endpoint);

// Reads a connection string from a file (surrounding whitespace trimmed).
Result<std::string> ReadConnectionStringFile(const std::string& path);

}  // namespace stampfs
