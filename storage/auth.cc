#include "storage/auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>
#include <vector>

#include "storage/token_credential.h"

namespace stampfs {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// Lowercased header name -> value; later duplicates win, like SetHeader.
std::map<std::string, std::string> HeaderMap(const HttpRequest& request) {
  std::map<std::string, std::string> map;
  for (const auto& [name, value] : request.headers) map[Lower(name)] = value;
  return map;
}

std::string Get(const std::map<std::string, std::string>& map, const char* name) {
  auto it = map.find(name);
  return it == map.end() ? std::string() : it->second;
}

// Splits "scheme://host[:port]/path?query#frag" into the path exactly as sent
// ("/" when empty, as curl sends it) and the raw query.
void SplitUrl(const std::string& url, std::string* path, std::string* query) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find('#', start);
  std::string rest = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  size_t slash = rest.find_first_of("/?");
  rest = slash == std::string::npos ? std::string() : rest.substr(slash);
  size_t q = rest.find('?');
  *path = rest.substr(0, q);
  *query = q == std::string::npos ? std::string() : rest.substr(q + 1);
  if (path->empty()) path->push_back('/');  // not `= "/"`: GCC 12 -O3 -Wrestrict false positive
}

// Query values decode with '+' as space, as the services do (callers encode '+').
std::string QueryDecode(std::string s) {
  std::replace(s.begin(), s.end(), '+', ' ');
  return UrlDecode(s);
}

// Lowercased, decoded name -> decoded values, in name order.
std::map<std::string, std::vector<std::string>> ParseQuery(const std::string& query) {
  std::map<std::string, std::vector<std::string>> params;
  size_t pos = 0;
  while (pos <= query.size() && !query.empty()) {
    size_t amp = query.find('&', pos);
    std::string pair = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      std::string name = Lower(QueryDecode(pair.substr(0, eq)));
      std::string value =
          eq == std::string::npos ? std::string() : QueryDecode(pair.substr(eq + 1));
      params[name].push_back(std::move(value));
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return params;
}

// Body-carrying verbs send Content-Length even when 0; it signs as "" then too.
std::string ContentLengthSlot(const HttpRequest& request) {
  return request.body.size == 0 ? std::string() : std::to_string(request.body.size);
}

std::string Sign(const std::string& key, const std::string& string_to_sign) {
  return Base64Encode(HmacSha256(key, string_to_sign));
}

}  // namespace

std::string Base64Encode(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(const std::string& text) {
  const Status bad(Code::kInvalidArgument, "not valid base64");
  if (text.size() % 4 != 0) return bad;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      ++padding;
    } else if (padding > 0 || !IsBase64Char(c)) {
      return bad;  // data after '=' or outside the alphabet
    }
  }
  if (padding > 2) return bad;
  if (text.empty()) return std::string();
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) < padding) return bad;
  // EVP_DecodeBlock counts padding as zero bytes.
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

std::string HmacSha256(const std::string& key, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

std::string BlobStringToSign(const HttpRequest& request, const std::string& account) {
  const auto headers = HeaderMap(request);
  std::string s = request.method + "\n";
  s += Get(headers, "content-encoding") + "\n";
  s += Get(headers, "content-language") + "\n";
  s += ContentLengthSlot(request) + "\n";
  for (const char* name : {"content-md5", "content-type", "date", "if-modified-since", "if-match",
                           "if-none-match", "if-unmodified-since", "range"}) {
    s += Get(headers, name) + "\n";
  }
  // std::map iterates in byte order, which is the services' ordinal order.
  for (const auto& [name, value] : headers) {
    if (name.rfind("x-ms-", 0) == 0) s += name + ":" + Trim(value) + "\n";
  }
  std::string path, query;
  SplitUrl(request.url, &path, &query);
  s += "/" + account + path;
  for (auto& [name, values] : ParseQuery(query)) {
    std::sort(values.begin(), values.end());
    std::string joined;
    for (size_t i = 0; i < values.size(); ++i) joined += (i ? "," : "") + values[i];
    s += "\n" + name + ":" + joined;
  }
  return s;
}

std::string TableStringToSign(const HttpRequest& request, const std::string& account) {
  const auto headers = HeaderMap(request);
  std::string date = Get(headers, "date");
  if (date.empty()) date = Get(headers, "x-ms-date");
  std::string path, query;
  SplitUrl(request.url, &path, &query);
  std::string resource = "/" + account + path;
  // Only comp is signed; $filter, continuation tokens etc. are not.
  auto params = ParseQuery(query);
  auto comp = params.find("comp");
  if (comp != params.end()) resource += "?comp=" + comp->second.back();
  return request.method + "\n" + Get(headers, "content-md5") + "\n" + Get(headers, "content-type") +
         "\n" + date + "\n" + resource;
}

std::string HttpDateNow() {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  // Names spelled out by hand: strftime's %a/%b follow the locale.
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday % 7],
                tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

RequestSigner MakeSigner(const StorageAccount& account, Service service, HttpDateFn now) {
  if (!now) now = HttpDateNow;
  if (account.HasKey()) {
    // The parser has validated the key; an undecodable one signs with an empty
    // key and the service answers 403.
    auto decoded = Base64Decode(account.account_key);
    std::string key = decoded.ok() ? *decoded : std::string();
    std::string name = account.account_name;
    return [key, name, service, now](HttpRequest& request) {
      request.SetHeader("x-ms-date", now());
      std::string sts = service == Service::kTable ? TableStringToSign(request, name)
                                                   : BlobStringToSign(request, name);
      request.SetHeader("Authorization", "SharedKey " + name + ":" + Sign(key, sts));
      return Status::Ok();
    };
  }
  if (account.HasToken()) {
    // Blob needs x-ms-version >= 2017-11-09 and Table >= 2019-02-02 for
    // bearer tokens; the clients send newer ones (azure_clients.h).
    return [credential = account.token_credential, now](HttpRequest& request) -> Status {
      request.SetHeader("x-ms-date", now());
      auto token = credential->Token();
      STAMPFS_RETURN_IF_ERROR(token);
      request.SetHeader("Authorization", "Bearer " + *token);
      return Status::Ok();
    };
  }
  std::string sas = service == Service::kTable && !account.table_sas_token.empty()
                        ? account.table_sas_token
                        : account.sas_token;
  return [sas, now](HttpRequest& request) {
    request.SetHeader("x-ms-date", now());
    if (sas.empty()) return Status::Ok();
    // Signing the same request twice must not append the token twice.
    size_t q = request.url.find('?');
    if (q != std::string::npos && request.url.size() >= sas.size() &&
        request.url.compare(request.url.size() - sas.size(), sas.size(), sas) == 0) {
      return Status::Ok();
    }
    request.url += (q == std::string::npos ? "?" : "&") + sas;
    return Status::Ok();
  };
}

}  // namespace stampfs
