// The `openrnn` command: train and sample the classic demos, fetch their data, plot their metrics.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "io_error.h"

namespace {
constexpr const char* kUsage =
    "usage: openrnn COMMAND [options]     (openrnn COMMAND --help for a command's options)\n"
    "  mnist                  train the row-LSTM classifier on MNIST / Fashion-MNIST\n"
    "  char train FILE        train a character-level LSTM language model on a text file\n"
    "  char sample            generate text from a char checkpoint\n"
    "  data download|verify   fetch the data sets / check their SHA-256\n"
    "  plot METRICS.jsonl -o OUT.svg   loss / accuracy curves\n"
    "  version\n";
}  // namespace

int main(int argc, char** argv) {
  using namespace openrnn::app;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "mnist") return cmd_mnist(rest);
    if (cmd == "char") {
      if (rest.empty()) throw UsageError("char needs a subcommand: train or sample");
      const std::string sub = rest[0];
      std::vector<std::string> r2(rest.begin() + 1, rest.end());
      if (sub == "train") return cmd_char_train(r2);
      if (sub == "sample") return cmd_char_sample(r2);
      throw UsageError("unknown char subcommand \"" + sub + "\" (train or sample)");
    }
    if (cmd == "data") return cmd_data(rest);
    if (cmd == "plot") return cmd_plot(rest);
    if (cmd == "version") {
      const int v = openrnn_version();
      std::printf("openrnn %d.%d.%d\n", v / 10000, (v / 100) % 100, v % 100);
      return 0;
    }
    throw UsageError("unknown command \"" + cmd + "\"");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "openrnn %s: %s\n(openrnn %s --help lists the options)\n", cmd.c_str(), e.what(), cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "openrnn %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
