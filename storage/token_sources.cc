#include "storage/token_sources.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

extern char** environ;

namespace stampfs {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A token endpoint's error answer, short: OAuth's error and error_description
// (never a token: those are only in 200 answers).
std::string ErrorSummary(const HttpResponse& response) {
  std::string summary = "HTTP " + std::to_string(response.status);
  auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (doc.is_object()) {
    for (const char* name : {"error", "error_description", "message"}) {
      auto it = doc.find(name);
      if (it != doc.end() && it->is_string()) summary += ": " + it->get<std::string>();
    }
  }
  if (summary.size() > 400) summary = summary.substr(0, 400) + "...";
  return summary;
}

Result<AccessToken> Request(HttpTransport& transport, HttpRequest request, milliseconds deadline,
                            const std::string& what) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  policy.initial_backoff = milliseconds(200);
  policy.max_backoff = milliseconds(2000);
  policy.attempt_timeout = std::min(deadline, milliseconds(10000));
  policy.total_deadline = deadline;
  // The transport outlives the client; no ownership taken.
  RetryingHttpClient http(std::shared_ptr<HttpTransport>(&transport, [](HttpTransport*) {}),
                          policy);
  auto response = http.Execute(std::move(request), {});
  if (!response.ok()) return response.status().WithContext(what);
  if (response->status != 200) {
    return Status(Code::kAuth, what + ": " + ErrorSummary(*response), response->status);
  }
  auto token = ParseTokenResponse(response->body, std::chrono::system_clock::now());
  if (!token.ok()) return token.status().WithContext(what);
  return token;
}

std::string WithQuery(const std::string& endpoint, const std::string& query) {
  return endpoint + (endpoint.find('?') == std::string::npos ? "?" : "&") + query;
}

// IMDS and the App Service form differ in api-version and the header that
// proves the caller runs on the machine.
class ManagedIdentitySource : public TokenSource {
 public:
  struct Form {
    const char* label;        // "IMDS", "IDENTITY_ENDPOINT"
    const char* api_version;  // 2018-02-01, 2019-08-01
    const char* header;       // Metadata, X-IDENTITY-HEADER
  };

  ManagedIdentitySource(std::shared_ptr<HttpTransport> transport, Form form, std::string endpoint,
                        std::string header_value, std::string resource, std::string client_id)
      : transport_(std::move(transport)),
        form_(form),
        endpoint_(std::move(endpoint)),
        header_value_(std::move(header_value)),
        resource_(ResourceWithoutSlash(resource)),
        client_id_(std::move(client_id)) {}

  Result<AccessToken> Fetch(milliseconds deadline) override {
    HttpRequest request;
    request.method = "GET";
    std::string query =
        std::string("api-version=") + form_.api_version + "&resource=" + UrlEncode(resource_);
    if (!client_id_.empty()) query += "&client_id=" + UrlEncode(client_id_);
    request.url = WithQuery(endpoint_, query);
    request.SetHeader(form_.header, header_value_);
    return Request(*transport_, std::move(request), deadline, Describe());
  }

  std::string Describe() const override {
    return std::string("managed identity (") + form_.label + " " + endpoint_ +
           (client_id_.empty() ? std::string() : ", client_id " + client_id_) + ")";
  }

 private:
  std::shared_ptr<HttpTransport> transport_;
  Form form_;
  std::string endpoint_, header_value_, resource_, client_id_;
};

class ClientCredentialSource : public TokenSource {
 public:
  ClientCredentialSource(std::shared_ptr<HttpTransport> transport, ClientCredentials c)
      : transport_(std::move(transport)), c_(std::move(c)) {
    while (!c_.authority_host.empty() && c_.authority_host.back() == '/') {
      c_.authority_host.pop_back();
    }
  }

  Result<AccessToken> Fetch(milliseconds deadline) override {
    const std::string url =
        c_.authority_host + "/" + UrlEncode(c_.tenant_id) + "/oauth2/v2.0/token";
    std::string form = "grant_type=client_credentials&client_id=" + UrlEncode(c_.client_id) +
                       "&scope=" + UrlEncode(ResourceWithoutSlash(c_.resource) + "/.default");
    if (!c_.client_secret.empty()) {
      form += "&client_secret=" + UrlEncode(c_.client_secret);
    } else {
      auto assertion = c_.assertion(url);
      if (!assertion.ok()) return assertion.status().WithContext(Describe());
      form += "&client_assertion_type=" +
              UrlEncode("urn:ietf:params:oauth:client-assertion-type:jwt-bearer") +
              "&client_assertion=" + UrlEncode(*assertion);
    }
    HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.SetHeader("Content-Type", "application/x-www-form-urlencoded");
    request.SetHeader("Accept", "application/json");
    request.body = HttpBody::FromString(std::move(form));
    return Request(*transport_, std::move(request), deadline, Describe());
  }

  std::string Describe() const override {
    return c_.kind + " (tenant " + c_.tenant_id + ", client_id " + c_.client_id + ", " +
           c_.authority_host + ")";
  }

 private:
  std::shared_ptr<HttpTransport> transport_;
  ClientCredentials c_;
};

// Reads all of `fd` until EOF or `deadline`; false on timeout.
bool ReadUntil(int fd, std::string* out, Clock::time_point deadline) {
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (out->size() < (1u << 20)) out->append(buf, static_cast<size_t>(n));
  }
}

class AzCliSource : public TokenSource {
 public:
  AzCliSource(std::string az, std::string resource, std::string tenant_id)
      : az_(std::move(az)),
        resource_(ResourceWithoutSlash(resource)),
        tenant_(std::move(tenant_id)) {}

  Result<AccessToken> Fetch(milliseconds deadline) override {
    std::vector<std::string> args = {
        az_, "account", "get-access-token", "--resource", resource_ + "/", "-o", "json"};
    if (!tenant_.empty()) {
      args.push_back("--tenant");
      args.push_back(tenant_);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return Failed(std::strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return Failed(std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // A group of its own, so the deadline kills the CLI's children too.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = 0;
    int rc = ::posix_spawnp(&pid, az_.c_str(), &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
      ::close(out[0]);
      ::close(err[0]);
      return Failed("cannot run " + az_ + ": " + std::strerror(rc));
    }
    const Clock::time_point until = Clock::now() + deadline;
    std::string stdout_text, stderr_text;
    bool done = ReadUntil(out[0], &stdout_text, until) && ReadUntil(err[0], &stderr_text, until);
    ::close(out[0]);
    ::close(err[0]);
    if (!done) ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!done) {
      return Status(Code::kTimeout,
                    Describe() + ": no answer within " + std::to_string(deadline.count()) + " ms");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // stderr only: stdout may hold a token.
      std::string why = Trim(stderr_text);
      if (why.size() > 300) why = why.substr(0, 300) + "...";
      return Failed("exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                    (why.empty() ? std::string() : ": " + why));
    }
    auto token = ParseTokenResponse(stdout_text, std::chrono::system_clock::now());
    if (!token.ok()) return token.status().WithContext(Describe());
    return token;
  }

  std::string Describe() const override {
    return "Azure CLI (" + az_ + " account get-access-token" +
           (tenant_.empty() ? std::string() : " --tenant " + tenant_) + ")";
  }

 private:
  Status Failed(const std::string& why) const {
    return Status(Code::kAuth, Describe() + ": " + why);
  }

  std::string az_, resource_, tenant_;
};

class ChainSource : public TokenSource {
 public:
  ChainSource(std::vector<std::unique_ptr<TokenSource>> sources, milliseconds probe_deadline)
      : sources_(std::move(sources)), probe_deadline_(probe_deadline) {}

  Result<AccessToken> Fetch(milliseconds deadline) override {
    if (chosen_) return chosen_->Fetch(deadline);
    std::string reasons;
    for (auto& source : sources_) {
      auto token = source->Fetch(std::min(deadline, probe_deadline_));
      if (token.ok()) {
        chosen_ = source.get();
        return token;
      }
      reasons += "\n  " + token.status().ToString();
    }
    if (sources_.empty()) reasons = " none available";
    return Status(Code::kAuth,
                  "no Entra ID sign-in method worked (auth=auto tried, in order):" + reasons);
  }

  std::string Describe() const override {
    if (chosen_) return "auto: " + chosen_->Describe();
    return "auto";
  }

 private:
  std::vector<std::unique_ptr<TokenSource>> sources_;
  milliseconds probe_deadline_;
  TokenSource* chosen_ = nullptr;  // written by one fetch at a time (TokenCredential)
};

}  // namespace

std::string ResourceWithoutSlash(const std::string& resource) {
  std::string r = resource;
  if (r.size() > 9 && r.compare(r.size() - 9, 9, "/.default") == 0) r.resize(r.size() - 9);
  while (!r.empty() && r.back() == '/') r.pop_back();
  return r;
}

std::unique_ptr<TokenSource> MakeImdsSource(std::shared_ptr<HttpTransport> transport,
                                            std::string endpoint, std::string resource,
                                            std::string client_id) {
  return std::make_unique<ManagedIdentitySource>(
      std::move(transport), ManagedIdentitySource::Form{"IMDS", "2018-02-01", "Metadata"},
      std::move(endpoint), "true", std::move(resource), std::move(client_id));
}

std::unique_ptr<TokenSource> MakeAppServiceSource(std::shared_ptr<HttpTransport> transport,
                                                  std::string endpoint, std::string header,
                                                  std::string resource, std::string client_id) {
  return std::make_unique<ManagedIdentitySource>(
      std::move(transport),
      ManagedIdentitySource::Form{"IDENTITY_ENDPOINT", "2019-08-01", "X-IDENTITY-HEADER"},
      std::move(endpoint), std::move(header), std::move(resource), std::move(client_id));
}

std::unique_ptr<TokenSource> MakeClientCredentialSource(std::shared_ptr<HttpTransport> transport,
                                                        ClientCredentials credentials) {
  return std::make_unique<ClientCredentialSource>(std::move(transport), std::move(credentials));
}

AssertionFn FederatedTokenFileAssertion(std::string path) {
  return [path](const std::string&) -> Result<std::string> {
    std::ifstream in(path);
    if (!in) {
      return Status(Code::kAuth,
                    "cannot read federated token file " + path + ": " + std::strerror(errno));
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string token = Trim(buffer.str());
    if (token.empty()) return Status(Code::kAuth, "federated token file " + path + " is empty");
    return token;
  };
}

AssertionFn CertificateAssertion(std::shared_ptr<const ClientCertificate> cert,
                                 std::string client_id, SystemClockFn now) {
  if (!now) now = [] { return std::chrono::system_clock::now(); };
  return [cert, client_id, now](const std::string& audience) {
    return MakeClientAssertion(*cert, client_id, audience, now());
  };
}

std::unique_ptr<TokenSource> MakeAzCliSource(std::string az, std::string resource,
                                             std::string tenant_id) {
  return std::make_unique<AzCliSource>(std::move(az), std::move(resource), std::move(tenant_id));
}

std::unique_ptr<TokenSource> MakeChainSource(std::vector<std::unique_ptr<TokenSource>> sources,
                                             milliseconds probe_deadline) {
  return std::make_unique<ChainSource>(std::move(sources), probe_deadline);
}

Status CheckTokenEndpoint(const std::string& url, const std::string& what, bool allow_http) {
  const std::string lower = Lower(url);
  if (lower.rfind("https://", 0) == 0) return Status::Ok();
  if (lower.rfind("http://", 0) != 0) {
    return Status(Code::kInvalidArgument, what + " " + url + " is not an http(s) URL");
  }
  std::string authority = lower.substr(7, lower.find_first_of("/?#", 7) - 7);
  std::string host = !authority.empty() && authority[0] == '['
                         ? authority.substr(0, authority.find(']') + 1)
                         : authority.substr(0, authority.find(':'));
  if (allow_http || host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0 ||
      host.rfind("169.254.", 0) == 0) {
    return Status::Ok();
  }
  return Status(Code::kInvalidArgument,
                what + " " + url +
                    " is plain http to a host that is neither loopback nor link-local: "
                    "credentials would cross the network in the clear; use https, or allow_http");
}

}  // namespace stampfs
