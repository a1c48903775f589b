// Request signing: Shared Key for Blob (12 standard slots + x-ms-* headers +
// every query parameter), Shared Key for Table (verb, MD5, type, date,
// resource?comp only), and SAS (token appended to the query, no header).
#pragma once

#include <functional>
#include <string>

#include "storage/connection_string.h"
#include "storage/http.h"

namespace stampfs {

std::string Base64Encode(const std::string& bytes);
// Fails on characters outside the standard alphabet or bad padding.
Result<std::string> Base64Decode(const std::string& text);
// Raw 32-byte HMAC-SHA256.
std::string HmacSha256(const std::string& key, const std::string& message);
std::string Sha256Hex(const std::string& bytes);

// The exact strings Azure and Azurite sign (AZURE-PROTOCOL.md §1).
std::string BlobStringToSign(const HttpRequest& request, const std::string& account);
std::string TableStringToSign(const HttpRequest& request, const std::string& account);

// "Mon, 01 Jan 2024 00:00:00 GMT" for now, or a fixed value in tests.
using HttpDateFn = std::function<std::string()>;
std::string HttpDateNow();

// Queue requests are signed with the Blob scheme.
enum class Service { kBlob, kTable, kQueue };

// A signer for one service: sets x-ms-date, then Authorization (a Shared Key
// signature, or an Entra ID bearer token from account.token_credential), or
// appends the SAS token to the URL (once, even across retries).
RequestSigner MakeSigner(const StorageAccount& account, Service service,
                         HttpDateFn now = HttpDateNow);

}  // namespace stampfs
