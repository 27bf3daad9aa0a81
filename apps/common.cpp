#include "common.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "io_error.h"
#include "file_util.h"
#include "json.h"

namespace openrnn::app {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& valued,
           const std::set<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool long_opt = a.size() > 2 && a[0] == '-' && a[1] == '-';
    const bool short_opt = a.size() == 2 && a[0] == '-' && a[1] != '-';  // "-o": same as "--o"
    if (long_opt || short_opt) {
      std::string name = a.substr(long_opt ? 2 : 1), value;
      const size_t eq = name.find('=');
      bool has_value = false;
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (flags.count(name)) {
        if (has_value) throw UsageError("option --" + name + " takes no value");
        values_[name] = "1";
      } else if (valued.count(name)) {
        if (!has_value) {
          if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
          value = argv[++i];
        }
        values_[name] = value;
      } else {
        throw UsageError("unknown option --" + name);
      }
    } else {
      positional_.push_back(a);
    }
  }
}

std::string Args::str(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

long Args::integer(const std::string& name, long def, long min, long max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (errno || end == it->second.c_str() || *end)
    throw UsageError("--" + name + " must be an integer, got \"" + it->second + "\"");
  if (v < min || v > max)
    throw UsageError("--" + name + " must be in " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
                     it->second);
  return v;
}

double Args::real(const std::string& name, double def, double min, double max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno || end == it->second.c_str() || *end || !std::isfinite(v))
    throw UsageError("--" + name + " must be a number, got \"" + it->second + "\"");
  if (v < min || v > max) {
    std::ostringstream os;
    os << "--" << name << " must be in [" << min << ", " << max << "], got " << it->second;
    throw UsageError(os.str());
  }
  return v;
}

std::set<std::string> Args::given() const {
  std::set<std::string> s;
  for (const auto& kv : values_) s.insert(kv.first);
  return s;
}

DeviceContext make_device(const std::string& device) {
  DeviceContext d;
  d.name = device;
  if (device == "cpu") {
    d.ops = make_cpu_ops();
    d.handle = std::make_unique<Handle>(OPENRNN_DEVICE_CPU, 0);
  } else if (device == "cuda") {
    d.ops = make_cuda_ops(0);
    d.handle = std::make_unique<Handle>(OPENRNN_DEVICE_CUDA, 0);
    d.handle->set_stream(d.ops->stream());
  } else {
    throw UsageError("--device must be cpu or cuda, got \"" + device + "\"");
  }
  return d;
}

openrnn_algo parse_algo(const std::string& s) {
  if (s == "auto") return OPENRNN_ALGO_AUTO;
  if (s == "standard") return OPENRNN_ALGO_STANDARD;
  if (s == "persistent") return OPENRNN_ALGO_PERSISTENT;
  throw UsageError("--algo must be auto, standard or persistent, got \"" + s + "\"");
}

Progress::Progress() : tty_(::isatty(STDERR_FILENO) == 1) {}

void Progress::update(const std::string& text, bool force) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (tty_ && shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  shown_ = false;
}

void Progress::print(const std::string& line) {
  clear();
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

MetricsFile::MetricsFile(const std::string& path, bool resume, long resume_step) : path_(path) {
  if (resume && io::file_exists(path)) {
    std::ifstream in(path);
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        const io::Json j = io::Json::parse(line);
        if (j.has("step") && j.at("step").as_int64("step") > resume_step) continue;
      } catch (const io::FormatError&) {
        continue;  // a line cut short by the crash
      }
      kept += line + "\n";
    }
    io::write_file_atomic(path, kept.data(), kept.size());
    f_ = std::fopen(path.c_str(), "a");
  } else {
    f_ = std::fopen(path.c_str(), "w");
  }
  if (!f_) throw std::runtime_error("cannot open metrics file " + path + ": " + std::strerror(errno));
}

MetricsFile::~MetricsFile() {
  if (f_) std::fclose(f_);
}

void MetricsFile::write(const std::string& line) {
  if (!f_) return;
  std::fprintf(f_, "%s\n", line.c_str());
  std::fflush(f_);
}

std::string data_root(const std::string& opt) {
  if (!opt.empty()) return opt;
  if (const char* e = std::getenv("OPENRNN_DATA"); e && *e) return e;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/openrnn";
  return ".cache/openrnn";
}

std::string require_data_file(const std::string& root, const std::string& dataset, const std::string& file) {
  const std::string path = root + "/" + dataset + "/" + file;
  if (io::file_exists(path)) return path;
  throw std::runtime_error("missing data file " + path + "\n  put " + file + " (as distributed) into " + root + "/" +
                           dataset + "/, or run: openrnn data download --dir " + root + " " + dataset +
                           "\n  (--data DIR or $OPENRNN_DATA choose the folder; now: " + root + ")");
}

void require_data_files(const std::string& root, const std::string& dataset, const std::vector<std::string>& files) {
  std::string missing;
  for (const std::string& f : files)
    if (!io::file_exists(root + "/" + dataset + "/" + f)) missing += "\n  " + root + "/" + dataset + "/" + f;
  if (missing.empty()) return;
  throw std::runtime_error("missing data file(s):" + missing + "\nPut these files (as distributed, gzipped) into " +
                           root + "/" + dataset + "/, or run: openrnn data download --dir " + root + " " + dataset +
                           "\n(--data DIR or $OPENRNN_DATA choose the folder; now: " + root + ")");
}

void save_params(io::SafeTensors& st, const Optimizer& opt) {
  for (Param* p : opt.params()) {
    std::vector<float> v(p->size()), s1, s2;
    p->value.download(v.data());
    if (p->state1.size()) {
      s1.resize(p->size());
      p->state1.download(s1.data());
    }
    if (p->state2.size()) {
      s2.resize(p->size());
      p->state2.download(s2.data());
    }
    for (const ParamView& w : p->views) {
      st.tensors[w.name] = io::Tensor::from_f32(v.data() + w.offset, w.shape);
      if (!s1.empty())
        st.tensors[std::string("optim.") + opt.state1_name() + "." + w.name] =
            io::Tensor::from_f32(s1.data() + w.offset, w.shape);
      if (!s2.empty())
        st.tensors[std::string("optim.") + opt.state2_name() + "." + w.name] =
            io::Tensor::from_f32(s2.data() + w.offset, w.shape);
    }
  }
}

void load_params(const io::SafeTensors& st, Optimizer& opt, const std::string& source) {
  // Pass 1: check every tensor; pass 2: copy. A mismatch leaves the model as it was.
  auto check = [&](const std::string& name, const ParamView& w) -> const io::Tensor& {
    const io::Tensor& t = st.get(name, source);
    if (t.dtype != io::DType::F32 || t.shape != w.shape) {
      std::string want, got;
      for (int64_t d : w.shape) want += (want.empty() ? "" : ",") + std::to_string(d);
      for (int64_t d : t.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
      throw io::FormatError(source + ": tensor " + name + " is " + io::dtype_name(t.dtype) + " [" + got +
                            "], the model needs F32 [" + want + "]");
    }
    return t;
  };
  const std::string s1 = std::string("optim.") + opt.state1_name() + ".";
  const std::string s2 = std::string("optim.") + opt.state2_name() + ".";
  for (Param* p : opt.params())
    for (const ParamView& w : p->views) {
      check(w.name, w);
      if (p->state1.size()) check(s1 + w.name, w);
      if (p->state2.size()) check(s2 + w.name, w);
    }
  for (Param* p : opt.params()) {
    std::vector<float> v(p->size()), a(p->state1.size()), b(p->state2.size());
    for (const ParamView& w : p->views) {
      std::memcpy(v.data() + w.offset, st.get(w.name).data.data(), w.numel() * sizeof(float));
      if (!a.empty()) std::memcpy(a.data() + w.offset, st.get(s1 + w.name).data.data(), w.numel() * sizeof(float));
      if (!b.empty()) std::memcpy(b.data() + w.offset, st.get(s2 + w.name).data.data(), w.numel() * sizeof(float));
    }
    p->value.upload(v.data());
    if (!a.empty()) p->state1.upload(a.data());
    if (!b.empty()) p->state2.upload(b.data());
  }
}

std::string meta_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

double parse_meta_double(const std::string& s, const std::string& key) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end) throw io::FormatError("checkpoint metadata " + key + " is not a number: \"" + s + "\"");
  return v;
}

long parse_meta_long(const std::string& s, const std::string& key) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno) throw io::FormatError("checkpoint metadata " + key + " is not an integer: \"" + s + "\"");
  return v;
}

void maybe_kill_at(long step, long kill_at) {
  if (kill_at > 0 && step == kill_at) {
    std::fflush(stdout);
    ::kill(::getpid(), SIGKILL);
  }
}

}  // namespace openrnn::app
