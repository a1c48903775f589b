#include "tests/tools/token_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "storage/client_assertion.h"
#include "storage/http.h"

namespace stampfs::testing {
namespace {

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Digest(const EVP_MD* md, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::map<std::string, std::string> ParseForm(const std::string& text) {
  std::map<std::string, std::string> form;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t amp = text.find('&', pos);
    std::string pair = text.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    size_t eq = pair.find('=');
    std::string name = pair.substr(0, eq),
                value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    std::replace(value.begin(), value.end(), '+', ' ');
    form[UrlDecode(name)] = UrlDecode(value);
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return form;
}

std::string OAuthError(const std::string& error, const std::string& description) {
  return nlohmann::json{{"error", error}, {"error_description", description}}.dump();
}

Result<nlohmann::json> JwtPart(const std::string& part) {
  auto raw = Base64UrlDecode(part);
  if (!raw.ok()) return raw.status();
  auto doc = nlohmann::json::parse(*raw, nullptr, false);
  if (!doc.is_object()) return Status(Code::kInvalidArgument, "a JWT part is not a JSON object");
  return doc;
}

}  // namespace

std::string MakeTestAccessToken(const std::string& audience, const std::string& tenant_id,
                                const std::string& client_id, int lifetime_seconds) {
  const int64_t now = NowSeconds();
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"kid", "stampfs-test"}};
  nlohmann::json claims = {{"aud", audience},
                           {"iss", "https://sts.windows.net/" + tenant_id + "/"},
                           {"iat", now},
                           {"nbf", now - 60},
                           {"exp", now + lifetime_seconds},
                           {"tid", tenant_id},
                           {"appid", client_id},
                           {"oid", "5f4e3d2c-1b0a-4987-8654-3210fedcba98"}};
  std::string sig(64, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(sig.data()), static_cast<int>(sig.size()));
  return Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims.dump()) + "." +
         Base64UrlEncode(sig);
}

Status VerifyClientAssertion(const std::string& jwt, const std::string& cert_pem,
                             const std::string& audience, const std::string& client_id) {
  const Status bad(Code::kAuth, "client assertion: malformed JWT");
  size_t a = jwt.find('.'), b = jwt.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos) return bad;
  auto header = JwtPart(jwt.substr(0, a));
  auto claims = JwtPart(jwt.substr(a + 1, b - a - 1));
  auto sig = Base64UrlDecode(jwt.substr(b + 1));
  if (!header.ok() || !claims.ok() || !sig.ok()) return bad;
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* x509 = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!x509) return Status(Code::kInternal, "test certificate unreadable");
  unsigned char* der_buf = nullptr;
  int der_len = i2d_X509(x509, &der_buf);
  std::string der(reinterpret_cast<const char*>(der_buf), static_cast<size_t>(der_len));
  OPENSSL_free(der_buf);
  EVP_PKEY* key = X509_get_pubkey(x509);
  X509_free(x509);
  const std::string input = jwt.substr(0, b);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool verified =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig->data()), sig->size(),
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  if (!verified) return Status(Code::kAuth, "client assertion: signature does not verify");
  const nlohmann::json& h = *header;
  const nlohmann::json& c = *claims;
  if (h.value("alg", "") != "RS256" || h.value("typ", "") != "JWT") {
    return Status(Code::kAuth, "client assertion: header alg/typ");
  }
  if (h.value("x5t", "") != Base64UrlEncode(Digest(EVP_sha1(), der)) ||
      h.value("x5t#S256", "") != Base64UrlEncode(Digest(EVP_sha256(), der))) {
    return Status(Code::kAuth, "client assertion: thumbprint does not match the certificate");
  }
  if (c.value("aud", "") != audience) {
    return Status(Code::kAuth,
                  "client assertion: aud " + c.value("aud", "") + ", want " + audience);
  }
  if (c.value("iss", "") != client_id || c.value("sub", "") != client_id ||
      c.value("jti", "").empty()) {
    return Status(Code::kAuth, "client assertion: iss/sub/jti");
  }
  const int64_t now = NowSeconds();
  if (!c.contains("nbf") || !c.contains("exp") || c["nbf"].get<int64_t>() > now + 5 ||
      c["exp"].get<int64_t>() <= now) {
    return Status(Code::kAuth, "client assertion: not valid now (nbf/exp)");
  }
  return Status::Ok();
}

std::string MakeSelfSignedPem(const std::string& common_name) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* x509 = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x509), 1);
  X509_gmtime_adj(X509_getm_notBefore(x509), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x509), 3600L * 24 * 30);
  X509_set_pubkey(x509, key);
  X509_NAME* name = X509_get_subject_name(x509);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(x509, name);
  X509_sign(x509, key, EVP_sha256());
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, x509);
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(len));
  BIO_free(bio);
  X509_free(x509);
  EVP_PKEY_free(key);
  return pem;
}

Result<std::unique_ptr<TokenServer>> TokenServer::Start(TokenServerOptions options) {
  std::unique_ptr<TokenServer> server(new TokenServer());
  server->options_ = std::move(options);
  server->lifetime_ = server->options_.lifetime_seconds;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(server->options_.port));
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 64) != 0) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    return Status(Code::kTransport,
                  std::string("token server: cannot listen: ") + std::strerror(err));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  server->listen_fd_ = fd;
  server->port_ = ntohs(addr.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

TokenServer::~TokenServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int TokenServer::count(const std::string& form) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(form);
  return it == counts_.end() ? 0 : it->second;
}

void TokenServer::set_lifetime(int seconds) { lifetime_ = seconds; }
void TokenServer::set_refusing(bool refusing) { refusing_ = refusing; }

void TokenServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Handle(fd);
    ::close(fd);
  }
}

// One request per connection (the answer says Connection: close).
void TokenServer::Handle(int fd) {
  std::string data;
  char buf[8192];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::string lower = data.substr(0, header_end);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t cl = lower.find("content-length:");
        if (cl != std::string::npos) content_length = std::stoul(lower.substr(cl + 15));
      }
    }
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) break;
  }
  if (header_end == std::string::npos) return;
  std::map<std::string, std::string> headers;
  size_t line_end = data.find("\r\n");
  std::string request_line = data.substr(0, line_end);
  size_t pos = line_end + 2;
  while (pos < header_end) {
    size_t next = data.find("\r\n", pos);
    std::string line = data.substr(pos, next - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      headers[name] = value;
    }
    pos = next + 2;
  }
  std::string method = request_line.substr(0, request_line.find(' '));
  size_t t = request_line.find(' ') + 1;
  std::string target = request_line.substr(t, request_line.find(' ', t) - t);
  int status = 200;
  std::string body = Answer(method, target, headers, data.substr(header_end + 4), &status);
  std::string response =
      "HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < response.size()) {
    ssize_t n = ::send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
}

std::string TokenServer::Issue(const std::string& form, bool epoch_strings) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[form];
  }
  const int lifetime = lifetime_;
  std::string token =
      MakeTestAccessToken(options_.audience, options_.tenant_id, options_.client_id, lifetime);
  nlohmann::json answer = {{"access_token", token}, {"token_type", "Bearer"}};
  if (epoch_strings) {  // IMDS and App Service answer with strings
    answer["expires_in"] = std::to_string(lifetime);
    answer["expires_on"] = std::to_string(NowSeconds() + lifetime);
    answer["resource"] = options_.audience;
  } else {
    answer["expires_in"] = lifetime;
    answer["ext_expires_in"] = lifetime;
  }
  return answer.dump();
}

std::string TokenServer::Answer(const std::string& method, const std::string& target,
                                const std::map<std::string, std::string>& headers,
                                const std::string& body, int* status) {
  auto header = [&headers](const char* name) {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  };
  const std::string path = target.substr(0, target.find('?'));
  const auto query = ParseForm(
      target.find('?') == std::string::npos ? std::string() : target.substr(target.find('?') + 1));
  auto q = [&query](const char* name) {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  };
  auto refuse = [this, status](int code, const std::string& error, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_["refused"];
    *status = code;
    return OAuthError(error, why);
  };
  if (path == "/stats") {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json stats = nlohmann::json::object();
    for (const char* form :
         {"imds", "appservice", "secret", "certificate", "workload", "refused"}) {
      stats[form] = counts_.count(form) ? counts_[form] : 0;
    }
    return stats.dump();
  }
  if (refusing_) return refuse(503, "temporarily_unavailable", "the test turned the server off");
  const std::string resource_ok = options_.audience;
  auto resource_matches = [&resource_ok](const std::string& r) {
    return r == resource_ok || r == resource_ok + "/";
  };
  if (method == "GET" && path == "/metadata/identity/oauth2/token") {
    if (header("metadata") != "true") return refuse(400, "invalid_request", "Metadata header");
    if (q("api-version") != "2018-02-01") return refuse(400, "invalid_request", "api-version");
    if (!resource_matches(q("resource"))) return refuse(400, "invalid_resource", "resource");
    return Issue("imds", true);
  }
  if (method == "GET" && path == "/msi/token") {
    if (options_.identity_header.empty() ||
        header("x-identity-header") != options_.identity_header) {
      return refuse(401, "unauthorized_client", "X-IDENTITY-HEADER");
    }
    if (q("api-version") != "2019-08-01") return refuse(400, "invalid_request", "api-version");
    if (!resource_matches(q("resource"))) return refuse(400, "invalid_resource", "resource");
    return Issue("appservice", true);
  }
  const std::string token_path = "/" + options_.tenant_id + "/oauth2/v2.0/token";
  if (method == "POST" && path == token_path) {
    auto form = ParseForm(body);
    if (header("content-type") != "application/x-www-form-urlencoded") {
      return refuse(400, "invalid_request", "Content-Type");
    }
    if (form["grant_type"] != "client_credentials" || form["client_id"] != options_.client_id) {
      return refuse(400, "unauthorized_client", "AADSTS700016: grant_type or client_id");
    }
    if (form["scope"] != options_.audience + "/.default") {
      return refuse(400, "invalid_scope", "AADSTS70011: scope " + form["scope"]);
    }
    if (form.count("client_secret")) {
      if (options_.client_secret.empty() || form["client_secret"] != options_.client_secret) {
        return refuse(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.");
      }
      return Issue("secret", false);
    }
    if (form["client_assertion_type"] != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") {
      return refuse(400, "invalid_request", "client_assertion_type");
    }
    const std::string& assertion = form["client_assertion"];
    if (!options_.federated_token.empty() && assertion == options_.federated_token) {
      return Issue("workload", false);
    }
    if (!options_.cert_pem.empty()) {
      Status ok = VerifyClientAssertion(assertion, options_.cert_pem, base_url() + token_path,
                                        options_.client_id);
      if (ok.ok()) return Issue("certificate", false);
      return refuse(401, "invalid_client", "AADSTS700027: " + ok.message());
    }
    return refuse(401, "invalid_client", "AADSTS700027: client assertion not accepted");
  }
  return refuse(404, "not_found", method + " " + path);
}

}  // namespace stampfs::testing
