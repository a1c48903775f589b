#include "storage/sas.h"

#include "storage/http.h"

namespace stampfs {

bool SasGrant::read_only() const {
  return permissions.find_first_of("wacduxp") == std::string::npos;
}

SasGrant ParseSas(const std::string& token) {
  SasGrant grant;
  size_t start = !token.empty() && token[0] == '?' ? 1 : 0;
  while (start < token.size()) {
    size_t amp = token.find('&', start);
    if (amp == std::string::npos) amp = token.size();
    std::string pair = token.substr(start, amp - start);
    start = amp + 1;
    size_t eq = pair.find('=');
    if (eq == std::string::npos) continue;
    std::string name = pair.substr(0, eq);
    std::string value = UrlDecode(pair.substr(eq + 1));
    if (name == "sp") grant.permissions = value;
    if (name == "ss") grant.services = value;
    if (name == "sr") grant.resource = value;
    if (name == "tn" && grant.resource.empty()) grant.resource = "table " + value;
    if (name == "se") grant.expiry = value;
  }
  return grant;
}

std::string DescribeSas(const std::string& token) {
  SasGrant g = ParseSas(token);
  std::string out = "sp=" + g.permissions;
  if (g.account_sas()) out += ", ss=" + g.services;
  if (!g.resource.empty()) out += ", sr=" + g.resource;
  if (!g.expiry.empty()) out += ", se=" + g.expiry;
  return out;
}

}  // namespace stampfs
