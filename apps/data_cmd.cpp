// `openrnn data download|verify|where`: fetch the demo data sets from their public homes into the data folder and
// check each file against its published SHA-256 (the values in docs/demos.md, from the data sets' publishers).
// Fetching runs the `curl` program (no libcurl dependency); each file is downloaded to a temporary name, verified,
// then renamed into place, so a failed or interrupted download never leaves a bad file under the real name.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "commands.h"
#include "common.h"
#include "io_error.h"
#include "file_util.h"
#include "sha256.h"

namespace openrnn::app {
namespace {

struct DataFile {
  const char* dataset;  // folder under the data root
  const char* name;
  const char* sha256;
  const char* url;      // public home
};

// MNIST: the S3 mirror torchvision uses (the original yann.lecun.com host now refuses most clients).
// Fashion-MNIST: the zalandoresearch GitHub repository. Tiny Shakespeare: karpathy/char-rnn on GitHub.
constexpr DataFile kFiles[] = {
    {"mnist", "train-images-idx3-ubyte.gz", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
     "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz"},
    {"mnist", "train-labels-idx1-ubyte.gz", "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
     "https://ossci-datasets.s3.amazonaws.com/mnist/train-labels-idx1-ubyte.gz"},
    {"mnist", "t10k-images-idx3-ubyte.gz", "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
     "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-images-idx3-ubyte.gz"},
    {"mnist", "t10k-labels-idx1-ubyte.gz", "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
     "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz"},
    {"fashion-mnist", "train-images-idx3-ubyte.gz", "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
     "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/train-images-idx3-ubyte.gz"},
    {"fashion-mnist", "train-labels-idx1-ubyte.gz", "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
     "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/train-labels-idx1-ubyte.gz"},
    {"fashion-mnist", "t10k-images-idx3-ubyte.gz", "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
     "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/t10k-images-idx3-ubyte.gz"},
    {"fashion-mnist", "t10k-labels-idx1-ubyte.gz", "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
     "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/t10k-labels-idx1-ubyte.gz"},
    {"tinyshakespeare", "input.txt", "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
     "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"},
};

constexpr const char* kUsage =
    "usage: openrnn data download [--dir DIR] [--mirror URL] [mnist|fashion-mnist|tinyshakespeare|all]...\n"
    "       openrnn data verify   [--dir DIR] [mnist|fashion-mnist|tinyshakespeare|all]...\n"
    "  DIR defaults to $OPENRNN_DATA, else ~/.cache/openrnn. Files land in DIR/<dataset>/<file>.\n"
    "  --mirror URL  fetch URL/<dataset>/<file> instead of the public homes (any URL curl accepts, e.g. file:///path)\n";

std::vector<const DataFile*> select(const std::vector<std::string>& names) {
  std::vector<const DataFile*> out;
  std::vector<std::string> want = names;
  if (want.empty()) want.push_back("all");
  for (const std::string& n : want) {
    bool any = false;
    for (const DataFile& f : kFiles)
      if (n == "all" || n == f.dataset) {
        out.push_back(&f);
        any = true;
      }
    if (!any) throw UsageError("unknown data set \"" + n + "\" (mnist, fashion-mnist, tinyshakespeare or all)");
  }
  return out;
}

// Runs curl; returns its exit status. Arguments go straight to execvp (no shell).
int run_curl(const std::string& url, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    const char* argv[] = {"curl", "--fail", "--location", "--silent", "--show-error", "--retry", "2",
                          "--connect-timeout", "20", "--output", out.c_str(), url.c_str(), nullptr};
    ::execvp("curl", const_cast<char* const*>(argv));
    std::fprintf(stderr, "cannot run curl: %s (install curl, or put the files in place by hand)\n", std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int download(const Args& args) {
  const std::string root = data_root(args.str("dir", ""));
  const std::string mirror = args.str("mirror", "");
  int failures = 0;
  for (const DataFile* f : select(args.positional())) {
    const std::string dir = root + "/" + f->dataset;
    const std::string path = dir + "/" + f->name;
    if (io::file_exists(path) && io::sha256_file_hex(path) == f->sha256) {
      std::printf("ok       %s (already present, sha256 verified)\n", path.c_str());
      continue;
    }
    io::make_dirs(dir);
    const std::string url = mirror.empty() ? f->url : mirror + "/" + f->dataset + "/" + f->name;
    const std::string tmp = path + ".part." + std::to_string(::getpid());
    std::printf("fetch    %s\n", url.c_str());
    std::fflush(stdout);
    const int rc = run_curl(url, tmp);
    if (rc != 0) {
      ::unlink(tmp.c_str());
      std::fprintf(stderr,
                   "error: could not download %s (curl exit status %d).\n"
                   "  Offline? Copy %s by hand to %s\n",
                   url.c_str(), rc, f->name, path.c_str());
      ++failures;
      continue;
    }
    const std::string got = io::sha256_file_hex(tmp);
    if (got != f->sha256) {
      ::unlink(tmp.c_str());
      std::fprintf(stderr, "error: %s has sha256 %s, expected %s; the file was discarded\n", url.c_str(), got.c_str(),
                   f->sha256);
      ++failures;
      continue;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    }
    std::printf("ok       %s (sha256 verified)\n", path.c_str());
  }
  return failures ? 1 : 0;
}

int verify(const Args& args) {
  const std::string root = data_root(args.str("dir", ""));
  int failures = 0;
  for (const DataFile* f : select(args.positional())) {
    const std::string path = root + "/" + f->dataset + "/" + f->name;
    if (!io::file_exists(path)) {
      std::printf("missing  %s\n", path.c_str());
      ++failures;
      continue;
    }
    const std::string got = io::sha256_file_hex(path);
    if (got == f->sha256) {
      std::printf("ok       %s\n", path.c_str());
    } else {
      std::printf("BAD      %s: sha256 %s, expected %s\n", path.c_str(), got.c_str(), f->sha256);
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

int cmd_data(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "help") {
    std::fputs(kUsage, argv.empty() ? stderr : stdout);
    return argv.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "download") return download(Args(rest, {"dir", "mirror"}, {}));
  if (argv[0] == "verify") return verify(Args(rest, {"dir"}, {}));
  throw UsageError("unknown data command \"" + argv[0] + "\" (download or verify)");
}

}  // namespace openrnn::app
