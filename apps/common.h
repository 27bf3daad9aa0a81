// Shared pieces of the subcommands: argument parsing, the device context, progress and metrics output, data
// directory resolution and checkpoint packing of parameters and optimiser state.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "openrnn/openrnn.hpp"
#include "ops.h"
#include "optim.h"
#include "safetensors.h"

namespace openrnn::app {

// A command-line mistake: printed with the command's usage, exit status 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& m) : std::runtime_error(m) {}
};

// "--name value" options and "--flag" switches; anything else is positional. Unknown options are an error.
class Args {
 public:
  Args(const std::vector<std::string>& argv, const std::set<std::string>& valued, const std::set<std::string>& flags);
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& def) const;
  long integer(const std::string& name, long def, long min, long max) const;
  double real(const std::string& name, double def, double min, double max) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The options actually given (names without "--").
  std::set<std::string> given() const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The compute device of a run: the Ops for the small layers and the openrnn handle for the LSTM, on one stream.
struct DeviceContext {
  std::unique_ptr<Ops> ops;
  std::unique_ptr<Handle> handle;
  std::string name;  // "cpu" / "cuda"
};
DeviceContext make_device(const std::string& device);  // "cpu" or "cuda"
openrnn_algo parse_algo(const std::string& s);

// A live status line on a terminal (stderr, redrawn with \r at most 10 times a second); nothing when stderr is not a
// terminal. Plain report lines go to stdout through print(), which clears the live line first.
class Progress {
 public:
  Progress();
  void update(const std::string& text, bool force = false);
  void print(const std::string& line);
  void clear();

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// "12m05s"
std::string format_duration(double seconds);

// Metrics in JSON Lines, one object per report, fields in a fixed order with timing fields last. On resume the file is
// first cut back to the records with "step" <= the resumed step (written atomically), so a resumed run's file reads
// like an uninterrupted one.
class MetricsFile {
 public:
  MetricsFile() = default;
  MetricsFile(const std::string& path, bool resume, long resume_step);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  void write(const std::string& json_line);
  bool open() const { return f_ != nullptr; }

 private:
  FILE* f_ = nullptr;
  std::string path_;
};

// Where data sets live: --data DIR, else $OPENRNN_DATA, else ~/.cache/openrnn.
std::string data_root(const std::string& from_option);
// Path of a data set file, or UsageError-free std::runtime_error saying exactly which file to put where (and how to
// download it) when it is missing.
std::string require_data_file(const std::string& root, const std::string& dataset, const std::string& file);
// Checks all the files at once so the message lists every missing one.
void require_data_files(const std::string& root, const std::string& dataset, const std::vector<std::string>& files);

// Parameters and optimiser state <-> checkpoint tensors: "<view name>" for values, "optim.<state>.<view name>" for
// optimiser state. load_params checks every name, dtype and shape before it changes anything.
void save_params(io::SafeTensors& st, const Optimizer& opt);
void load_params(const io::SafeTensors& st, Optimizer& opt, const std::string& source);

// Metadata helpers: exact round trip of integers and doubles.
std::string meta_double(double v);  // hex float ("%a")
double parse_meta_double(const std::string& s, const std::string& key);
long parse_meta_long(const std::string& s, const std::string& key);

// Test hook for crash-recovery tests: --kill-at-step N makes the process SIGKILL itself right after step N.
void maybe_kill_at(long step, long kill_at);

}  // namespace openrnn::app
