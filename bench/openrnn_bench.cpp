// openrnn-bench: sweeps a grid of RNN problems, runs openrnn and a comparator (cuDNN on the GPU, oneDNN on the
// CPU) on identical weights and inputs, checks that their outputs agree, then times both. `--help` documents the
// options, what is timed and how, and the output columns.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_device.h"
#include "bench_openrnn.h"
#include "bench_options.h"
#include "bench_reference.h"
#include "openrnn/openrnn.h"
#ifdef OPENRNN_BENCH_HAVE_ONEDNN
#include "bench_onednn.h"
#endif
#ifdef OPENRNN_BENCH_HAVE_CUDNN
#include "bench_cudnn.h"
#endif

extern "C" {
// OpenBLAS (the CPU backend's BLAS): reported in the configuration.
int openblas_get_num_threads(void);
char* openblas_get_config(void);
}

namespace openrnn {
namespace bench {
namespace {

// Lines go to stdout and, with --csv, to the file too.
class Out {
 public:
  explicit Out(const std::string& path) {
    if (!path.empty()) {
      file_.open(path);
      if (!file_) throw std::runtime_error("--csv: cannot write " + path);
    }
  }
  void line(const std::string& s) {
    std::cout << s << '\n' << std::flush;
    if (file_.is_open()) file_ << s << '\n' << std::flush;
  }

 private:
  std::ofstream file_;
};

std::string utc_now() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s.empty() ? "unknown" : s;
}

void check(openrnn_status s, const char* what) {
  if (s != OPENRNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + openrnn_status_string(s) + ": " + openrnn_last_error());
}

std::unique_ptr<Comparator> make_comparator(const Options& o, Device& dev, [[maybe_unused]] Out& out) {
  if (o.compare == "onednn") {
#ifdef OPENRNN_BENCH_HAVE_ONEDNN
    return make_onednn_comparator(dev);
#else
    out.line("# comparator not built: oneDNN (configure with OPENRNN_BENCH_ONEDNN=ON and libdnnl-dev installed)");
#endif
  } else if (o.compare == "cudnn") {
#ifdef OPENRNN_BENCH_HAVE_CUDNN
    return make_cudnn_comparator(dev, o.cudnn_algos);
#else
    out.line("# comparator not built: cuDNN (configure with OPENRNN_CUDA=ON, OPENRNN_BENCH_CUDNN=ON and cudnn.h)");
#endif
  }
  (void)dev;
  return nullptr;
}

struct Row {
  explicit Row(const Problem* problem) : p(problem) {}
  const Problem* p;
  std::string algo;
  double us = NAN, gflops = NAN;
  std::string comp = "none", comp_algo = "none";
  double comp_us = NAN, ratio = NAN, rel = NAN;
  std::string status;
};

std::string csv(const Row& r) {
  const Problem& p = *r.p;
  std::ostringstream s;
  s << cell_label(p.cell) << ',' << dtype_label(p.dtype) << ',' << (p.training ? "training" : "inference") << ','
    << p.B << ',' << p.H << ',' << p.I << ',' << p.T << ',' << p.L << ',' << p.D << ',' << r.algo << ','
    << format_double(r.us, 5) << ',' << format_double(r.gflops, 4) << ',' << r.comp << ',' << r.comp_algo << ','
    << format_double(r.comp_us, 5) << ',' << format_double(r.ratio, 4) << ',' << format_double(r.rel, 3) << ','
    << csv_safe(r.status);
  return s.str();
}

// Every problem of the grid, in the order its rows are printed.
std::vector<std::unique_ptr<Problem>> grid(const Options& o) {
  std::vector<std::unique_ptr<Problem>> problems;
  for (openrnn_cell cell : o.cells)
    for (openrnn_data_type t : o.dtypes)
      for (bool tr : o.training)
        for (int L : o.layers)
          for (int D : o.dirs)
            for (int H : o.hidden)
              for (int B : o.batch)
                for (int T : o.seq)
                  for (int I : o.input) {
                    auto p = std::make_unique<Problem>();
                    p->cell = cell; p->dtype = t; p->training = tr;
                    p->B = B; p->H = H; p->I = I ? I : H; p->T = T; p->L = L; p->D = D;
                    p->P = o.proj;
                    p->math = o.math;
                    problems.push_back(std::move(p));
                  }
  return problems;
}

int run(const Options& o) {
  Out out(o.csv);
  std::unique_ptr<Device> dev = o.cuda ? make_cuda_device(o.ordinal) : make_cpu_device();
  openrnn_handle_t handle = nullptr;
  check(openrnn_create_handle(&handle, o.cuda ? OPENRNN_DEVICE_CUDA : OPENRNN_DEVICE_CPU, o.cuda ? o.ordinal : 0),
        "openrnn_create_handle");
  std::unique_ptr<openrnn_handle, decltype(&openrnn_destroy_handle)> handle_guard(handle, openrnn_destroy_handle);
  if (o.cuda) check(openrnn_set_stream(handle, dev->stream()), "openrnn_set_stream");
  if (!o.cuda && o.threads > 0) check(openrnn_set_num_threads(handle, o.threads), "openrnn_set_num_threads");
  if (!o.cuda && o.threads > 0) omp_set_num_threads(o.threads);

  const int v = openrnn_version();
  out.line("# openrnn-bench  " + utc_now() + (o.tag.empty() ? "" : "  tag " + o.tag));
  out.line("# device: " + std::string(o.cuda ? "cuda " : "cpu ") + dev->name());
  out.line("# openrnn " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100));
  if (!o.cuda) {
    int threads = 0;
    const std::string ours_threads = openrnn_get_num_threads(handle, &threads) == OPENRNN_STATUS_SUCCESS
                                         ? std::to_string(threads)
                                         : std::string("unknown (") + openrnn_last_error() + ")";
    out.line("# CPU threads: openrnn " + ours_threads + ", OpenMP max " +
             std::to_string(omp_get_max_threads()) + ", OpenBLAS default " +
             std::to_string(openblas_get_num_threads()) + " (openrnn sets its count before each call)" +
             " (" + openblas_get_config() + ")");
  }
  if (o.math != OPENRNN_MATH_DEFAULT)
    out.line(std::string("# openrnn math mode: ") +
             (o.math == OPENRNN_MATH_ALLOW_TF32 ? "ALLOW_TF32" : "ALLOW_REDUCED_STATE") + " (--math)");
  // The projection has no CSV column (scripts index the columns by position): this line is its record.
  if (o.proj > 0)
    out.line("# LSTM projection: P = " + std::to_string(o.proj) +
             " (--proj, every problem; the H column is the cell size: y, hx, hy are P wide, cx, cy H wide)");
  out.line("# load average at start: " + loadavg());
  std::unique_ptr<Comparator> comp = o.compare == "none" ? nullptr : make_comparator(o, *dev, out);
  if (comp)
    for (const auto& l : comp->describe()) out.line("# " + l);
  out.line("# timing: warmup " + std::to_string(o.timing.warmup) + ", median of " + std::to_string(o.timing.reps) +
           (o.cuda ? std::string(o.timing.graph ? ", CUDA graph replays of one captured call" : "") +
                         (o.timing.flush_l2 ? ", CUDA events, L2 flushed before each call" : ", CUDA events, no flush")
                   : (o.timing.process_clock ? ", CLOCK_PROCESS_CPUTIME_ID (CPU time)" : ", steady_clock")) +
           "; us_per_step = time / (T * L)" +
           (o.rounds > 1 ? "; " + std::to_string(o.rounds) +
                               " rounds alternating openrnn and the comparator, smallest median kept"
                         : std::string()));
  out.line("cell,dtype,mode,B,H,I,T,layers,dirs,algo,us_per_step,gflops,comparator,comparator_algo,"
           "comparator_us_per_step,ratio,max_rel_diff,status");

  int failures = 0;  // rows or reference checks that show a wrong result (--strict turns them into exit status 1)
  // Geometric mean of ratio against the comparator's best, per openrnn algorithm label.
  std::map<std::string, std::pair<double, int>> geo;
  const std::vector<std::unique_ptr<Problem>> problems = grid(o);

  for (const auto& pp : problems) {
    const Problem& p = *pp;
    ProblemData data;
    try {
      data = make_problem_data(p, o.seed);
    } catch (const std::exception& e) {
      Row r(&p);
      r.algo = "none";
      r.status = std::string("error: ") + e.what();
      out.line(csv(r));
      continue;
    }
    const double tol = o.tol > 0 ? o.tol : default_tolerance(p.dtype);
    std::vector<OursResult> ours = run_openrnn(handle, *dev, p, data, o.algos, o.timing);
    const OursResult* ref = nullptr;
    for (const auto& r : ours)
      if (r.status == "ok") { ref = &r; break; }
    // With --reference: the float64 reference checks openrnn, and stands in for it when openrnn has no result.
    Outputs reference;
    const Outputs* check_against = ref ? &ref->out : nullptr;
    if (o.reference) {
      try {
        reference = reference_outputs(p, data);
        for (const auto& r : ours) {
          if (r.status != "ok") continue;
          std::string which;
          const double rel = max_rel_diff(r.out, reference, &which);
          const bool bad = !(rel <= tol);
          failures += bad;
          out.line("# reference check: " + p.describe() + ": openrnn " + r.algo + " " + format_double(rel, 3) +
                   " (worst: " + which + ")" + (bad ? " FAILS the tolerance" : ""));
        }
        if (!check_against) check_against = &reference;
      } catch (const std::exception& e) {
        out.line(std::string("# reference: ") + e.what());
      }
    }

    std::vector<CompResult> theirs;
    bool print_reference = true;
    if (comp && check_against) {
      CheckFn checkfn = [&](const Outputs& t, double* rel, std::string* detail) {
        std::string which;
        *rel = max_rel_diff(t, *check_against, &which);
        if (print_reference && !reference.y.empty()) {
          std::string w2;
          const double r2 = max_rel_diff(t, reference, &w2);
          const bool bad = !(r2 <= tol);
          failures += bad;
          out.line("# reference check: " + p.describe() + ": " + comp->name() + " " + format_double(r2, 3) +
                   " (worst: " + w2 + ")" + (bad ? " FAILS the tolerance" : "") +
                   (ref ? "" : "; openrnn has no result: comparator checked against the reference"));
        }
        std::ostringstream s;
        s << "relative difference " << format_double(*rel, 3) << " in " << which << " > tolerance "
          << format_double(tol, 2);
        *detail = s.str();
        return *rel <= tol;
      };
      theirs = comp->run(p, data, checkfn, o.timing);
      // Further rounds alternate the engines again and keep each one's smallest median, so that a burst of load
      // from other processes on a shared machine lands on neither side alone.
      for (int round = 1; round < o.rounds; ++round) {
        print_reference = false;  // its lines were printed in the first round
        const auto again = run_openrnn(handle, *dev, p, data, o.algos, o.timing);
        for (size_t i = 0; i < ours.size() && i < again.size(); ++i)
          if (ours[i].status == "ok" && again[i].status == "ok")
            ours[i].us_per_step = std::min(ours[i].us_per_step, again[i].us_per_step);
        const auto more = comp->run(p, data, checkfn, o.timing);
        for (size_t i = 0; i < theirs.size() && i < more.size(); ++i)
          if (theirs[i].status == "ok" && more[i].status == "ok")
            theirs[i].us_per_step = std::min(theirs[i].us_per_step, more[i].us_per_step);
      }
    } else if (comp) {
      CompResult c;
      c.algo = "none";
      c.status = "not run: openrnn has no valid result to compare with";
      theirs.push_back(c);
    }
    // The comparator's fastest algorithm that agreed.
    const CompResult* best = nullptr;
    for (const auto& c : theirs)
      if (c.status == "ok" && (!best || c.us_per_step < best->us_per_step)) best = &c;
    if (best && theirs.size() > 1) {
      CompResult b = *best;
      b.algo = "best:" + best->algo;
      theirs.push_back(b);
      best = &theirs.back();
    }

    for (const auto& ourr : ours) {
      auto emit = [&](const CompResult* c) {
        Row r(&p);
        r.algo = ourr.algo;
        r.us = ourr.us_per_step;
        r.gflops = p.flops() / (ourr.us_per_step * p.T * p.L) * 1e-3;
        r.status = ourr.status == "ok" ? "ok" : "openrnn " + ourr.status;
        if (c) {
          r.comp = comp->name();
          r.comp_algo = c->algo;
          r.rel = c->rel_diff;
          if (ourr.status == "ok" && c->status == "ok") {
            if (&ourr != ref) {
              // This row's algorithm was not the one the comparator was checked against: check it now.
              std::string which;
              r.rel = max_rel_diff(c->out, ourr.out, &which);
              if (!(r.rel <= tol)) {
                r.status = "openrnn DISAGREES with the comparator in " + which;
                ++failures;
                out.line(csv(r));
                return;
              }
            }
            r.comp_us = c->us_per_step;
            r.ratio = c->us_per_step / ourr.us_per_step;
            if (c == best) {
              auto& g = geo[ourr.algo.rfind("auto:", 0) == 0 ? std::string("auto") : ourr.algo];
              g.first += std::log(r.ratio);
              g.second += 1;
            }
          } else if (c->status != "ok") {
            r.status = r.status == "ok" ? c->status : r.status + "; comparator " + c->status;
          }
        }
        failures += r.status.find("DISAGREES") != std::string::npos || r.status.find("error") != std::string::npos;
        out.line(csv(r));
      };
      if (theirs.empty()) {
        emit(nullptr);
      } else {
        for (const auto& c : theirs) emit(&c);
      }
    }
  }
  for (const auto& g : geo) {
    std::ostringstream s;
    s << "# geomean ratio (" << (comp ? comp->name() : "none") << " best / openrnn " << g.first << ") over "
      << g.second.second << " problems: " << format_double(std::exp(g.second.first / g.second.second), 4);
    out.line(s.str());
  }
  out.line("# load average at end: " + loadavg());
  out.line("# wrong results (disagreements, errors, reference checks over tolerance): " + std::to_string(failures));
  return o.strict && failures > 0 ? 1 : 0;
}

// --isolate. One problem's options: the grid reduced to that problem.
Options row_options(const Options& o, const Problem& p) {
  Options one = o;
  one.isolate = false;
  one.csv.clear();
  one.cells = {p.cell};
  one.dtypes = {p.dtype};
  one.training = {p.training};
  one.layers = {p.L};
  one.dirs = {p.D};
  one.hidden = {p.H};
  one.batch = {p.B};
  one.seq = {p.T};
  one.input = {p.I};
  return one;
}

// Runs run(one) in a forked child whose stdout is a pipe; returns what it printed and sets *status (waitpid's).
// Forked before this process has made any CUDA or openrnn call, so the child starts clean.
std::string run_child(const Options& one, int* status) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("--isolate: pipe() failed");
  std::cout.flush();
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("--isolate: fork() failed");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    int rc = 1;
    try {
      rc = run(one);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "openrnn-bench: %s\n", e.what());
    }
    std::cout.flush();
    std::fflush(stdout);
    _exit(rc);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(fds[0]);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return text;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) f.push_back(item);
  return f;
}

// Each problem in a process of its own (run_child), one after another. Printed: the first child's configuration
// lines and header, a line saying the rows are isolated, every child's rows and reference-check lines, then the
// geometric means and the count of wrong results over all children. A child that ends without its summary (a
// crash, a signal) counts as a wrong result and makes the exit status 1.
int run_isolated(const Options& o) {
  Out out(o.csv);
  const auto problems = grid(o);
  const std::string header = "cell,dtype,mode,B,H,I,T,layers,dirs,algo,";
  std::map<std::string, std::pair<double, int>> geo;  // as in run(): per openrnn algorithm, against the best
  std::string comp_name = "none";
  int failures = 0;
  bool abnormal = false;
  for (size_t i = 0; i < problems.size(); ++i) {
    int status = 0;
    const std::string text = run_child(row_options(o, *problems[i]), &status);
    std::istringstream in(text);
    std::vector<std::vector<std::string>> rows;
    bool summary = false, in_config = i == 0;
    for (std::string line; std::getline(in, line);) {
      const std::string wrong = "# wrong results (disagreements, errors, reference checks over tolerance): ";
      if (line.rfind(wrong, 0) == 0) {
        failures += std::atoi(line.c_str() + wrong.size());
        summary = true;
      } else if (line.rfind("# geomean", 0) == 0 || line.rfind("# load average at end", 0) == 0) {
        continue;
      } else if (line.rfind(header, 0) == 0) {
        if (in_config) {
          out.line("# --isolate: each of the " + std::to_string(problems.size()) +
                   " problems ran in a process of its own; the configuration lines are the first one's");
          out.line(line);
        }
        in_config = false;
      } else if (line.rfind('#', 0) == 0) {
        if (in_config || line.rfind("# reference check", 0) == 0) out.line(line);
      } else if (!line.empty()) {
        out.line(line);
        rows.push_back(csv_fields(line));
      }
    }
    const bool ok_exit = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1);
    if (!summary || !ok_exit) {
      abnormal = true;
      ++failures;
      out.line("# --isolate: the process of problem " + std::to_string(i + 1) + " (" + problems[i]->describe() +
               ") ended without its summary (" +
               (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                    : "exit status " + std::to_string(WEXITSTATUS(status))) +
               ")");
    }
    // run()'s geometric mean counts each openrnn row against the comparator's best: the "best:" row where the
    // comparator ran several algorithms, else its one row.
    bool has_best = false;
    for (const auto& r : rows) has_best = has_best || (r.size() == 18 && r[13].rfind("best:", 0) == 0);
    for (const auto& r : rows) {
      if (r.size() != 18 || r[17] != "ok" || r[13] == "none") continue;
      if (has_best != (r[13].rfind("best:", 0) == 0)) continue;
      const double ratio = std::strtod(r[15].c_str(), nullptr);
      if (!(ratio > 0)) continue;
      comp_name = r[12];
      auto& g = geo[r[9].rfind("auto:", 0) == 0 ? std::string("auto") : r[9]];
      g.first += std::log(ratio);
      g.second += 1;
    }
  }
  for (const auto& g : geo) {
    std::ostringstream s;
    s << "# geomean ratio (" << comp_name << " best / openrnn " << g.first << ") over " << g.second.second
      << " problems: " << format_double(std::exp(g.second.first / g.second.second), 4);
    out.line(s.str());
  }
  out.line("# load average at end: " + loadavg());
  out.line("# wrong results (disagreements, errors, reference checks over tolerance): " + std::to_string(failures));
  return abnormal || (o.strict && failures > 0) ? 1 : 0;
}

}  // namespace
}  // namespace bench
}  // namespace openrnn

int main(int argc, char** argv) {
  using namespace openrnn::bench;
  Options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "openrnn-bench: %s\n", e.what());
    return 2;
  }
  if (o.help) {
    std::fputs(help_text(), stdout);
    return 0;
  }
  try {
    return o.isolate ? run_isolated(o) : run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "openrnn-bench: %s\n", e.what());
    return 1;
  }
}
