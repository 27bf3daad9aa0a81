// launch_census: which calls of a process put work on the legacy default stream, and who made them (session 69).
//
// A CUPTI injection library: load it into any CUDA program with
//   CUDA_INJECTION64_PATH=/path/liblaunch_census.so LD_LIBRARY_PATH=<dir of libcupti.so.13>:... PROGRAM ARGS
// and it subscribes to the runtime and driver API callbacks. Every call that launches work (kernels, memsets,
// copies, graph launches, event records, stream waits, host functions) is classified by the stream it names:
// the legacy default stream (a null handle in a call without _ptsz / _ptds, CU_STREAM_LEGACY, or a synchronous
// memset / copy, which runs there), the per-thread default stream, or a named stream. Each legacy-stream call is
// printed when it happens, to stderr, with a running count per domain and the first frames of its caller outside
// CUPTI, this library and libcuda (library file + symbol + offset: resolve offsets with addr2line on the same build).
// At exit it prints every API function called with its count and how many of those calls named the legacy stream,
// and the driver-level kernel launches per named stream handle.
//
// Why: docs/performance.md (session 68) found that once 8 or more kernels have run on the legacy default stream, the
// STANDARD cuBLAS-step inference graph runs ~0.7 us per step slower for the rest of the process, and that neither
// openrnn nor openrnn-bench names that stream in any call. This census finds the calls that do.
//
// Switches (environment): CENSUS_PRINT=N prints at most N legacy-stream calls live (default 200); CENSUS_FRAMES=N
// caller frames per printed call (default 4); CENSUS_ALL=1 prints every launch-type call live, whatever its stream.
// Build: g++ -O2 -shared -fPIC -I/usr/local/cuda/include dev/lab/launch_census.cpp -L/usr/local/cuda/lib64 -lcupti
//        -ldl -o liblaunch_census.so   (or `make launch_census` in the lab's CMake).
#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

enum class Where { none, legacy, per_thread, named };

struct Tally {
  long calls = 0;
  long legacy = 0;
  long per_thread = 0;
  long named = 0;
};

std::mutex g_mu;
std::map<std::string, Tally>* g_tally = nullptr;  // "domain:function" -> counts (leaked on purpose: used at exit)
long g_legacy_seen[2] = {0, 0};                   // runtime, driver
std::map<uintptr_t, long>* g_kernels_by_stream = nullptr;  // driver-level kernel launches per stream handle
std::map<uintptr_t, std::string>* g_first_caller = nullptr;  // the caller of each stream's first kernel launch
long g_print_limit = 200;
int g_frames = 4;
bool g_print_all = false;
CUpti_SubscriberHandle g_sub;

// A stream handle as a call names it. `implicit_per_thread`: the _ptsz / _ptds entry points read a null handle as
// the per-thread default stream.
Where classify(const void* stream, bool implicit_per_thread) {
  const auto v = reinterpret_cast<uintptr_t>(stream);
  if (v == 0) return implicit_per_thread ? Where::per_thread : Where::legacy;
  if (v == 0x1) return Where::legacy;      // CU_STREAM_LEGACY / cudaStreamLegacy
  if (v == 0x2) return Where::per_thread;  // CU_STREAM_PER_THREAD / cudaStreamPerThread
  return Where::named;
}

bool ends_with(const char* s, const char* tail) {
  const size_t n = std::strlen(s), m = std::strlen(tail);
  return n >= m && std::strcmp(s + n - m, tail) == 0;
}

// The stream a runtime call names, or Where::none when it is not a call that queues work.
Where runtime_where(CUpti_CallbackId id, const void* p, const char* name) {
  const bool pt = std::strstr(name, "_ptsz") || std::strstr(name, "_ptds");
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      return classify(static_cast<const cudaLaunchKernel_v7000_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      return classify(static_cast<const cudaLaunchKernel_ptsz_v7000_params*>(p)->stream, true);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      return classify(static_cast<const cudaLaunchKernelExC_v11060_params*>(p)->config->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
      return classify(static_cast<const cudaMemsetAsync_v3020_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      return classify(static_cast<const cudaMemcpyAsync_v3020_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      return classify(static_cast<const cudaGraphLaunch_v10000_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
      return classify(static_cast<const cudaEventRecord_v3020_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
      return classify(static_cast<const cudaEventRecordWithFlags_v11010_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
      return classify(static_cast<const cudaStreamWaitEvent_v3020_params*>(p)->stream, false);
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
      return classify(static_cast<const cudaLaunchHostFunc_v10000_params*>(p)->stream, false);
    default:
      break;
  }
  // Synchronous memsets and copies (no stream argument) run on the legacy stream, or with _ptds on the per-thread one.
  if ((std::strncmp(name, "cudaMemset", 10) == 0 || std::strncmp(name, "cudaMemcpy", 10) == 0) &&
      !std::strstr(name, "Async") && !std::strstr(name, "Peer") && !std::strstr(name, "Batch"))
    return pt ? Where::per_thread : Where::legacy;
  return Where::none;
}

// The stream handle of a driver-level kernel launch (0 when the call is not one).
uintptr_t kernel_stream(CUpti_CallbackId id, const void* p) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return reinterpret_cast<uintptr_t>(static_cast<const cuLaunchKernel_params*>(p)->hStream);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return reinterpret_cast<uintptr_t>(static_cast<const cuLaunchKernelEx_params*>(p)->config->hStream);
    default:
      return 0;
  }
}

Where driver_where(CUpti_CallbackId id, const void* p, const char* name) {
  const bool pt = ends_with(name, "_ptsz") || ends_with(name, "_ptds");
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return classify(static_cast<const cuLaunchKernel_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return classify(static_cast<const cuLaunchKernelEx_params*>(p)->config->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return classify(static_cast<const cuLaunchCooperativeKernel_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
      return classify(static_cast<const cuMemsetD8Async_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
      return classify(static_cast<const cuMemsetD16Async_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
      return classify(static_cast<const cuMemsetD32Async_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
      return classify(static_cast<const cuMemcpyAsync_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
      return classify(static_cast<const cuMemcpyHtoDAsync_v2_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
      return classify(static_cast<const cuMemcpyDtoHAsync_v2_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
      return classify(static_cast<const cuMemcpyDtoDAsync_v2_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return classify(static_cast<const cuGraphLaunch_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz:
      return classify(static_cast<const cuEventRecord_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
      return classify(static_cast<const cuStreamWaitEvent_params*>(p)->hStream, pt);
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
      return classify(static_cast<const cuLaunchHostFunc_params*>(p)->hStream, pt);
    default:
      break;
  }
  if ((std::strncmp(name, "cuMemset", 8) == 0 || std::strncmp(name, "cuMemcpy", 8) == 0) &&
      !std::strstr(name, "Async") && !std::strstr(name, "Peer") && !std::strstr(name, "Batch"))
    return pt ? Where::per_thread : Where::legacy;
  return Where::none;
}

bool skip_frame(const char* file) {
  if (!file) return true;
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  return std::strncmp(base, "libcupti", 8) == 0 || std::strncmp(base, "liblaunch_census", 16) == 0 ||
         std::strncmp(base, "libcuda.so", 10) == 0;
}

// "lib+0xoff (symbol+0xoff) <- ..." for the first g_frames frames outside CUPTI, this library and libcuda.
std::string callers() {
  void* pcs[48];
  const int n = backtrace(pcs, 48);
  std::string out;
  int shown = 0;
  for (int i = 0; i < n && shown < g_frames; ++i) {
    Dl_info info{};
    if (!dladdr(pcs[i], &info) || skip_frame(info.dli_fname)) continue;
    const char* base = std::strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    char buf[512];
    const auto off = reinterpret_cast<uintptr_t>(pcs[i]) - reinterpret_cast<uintptr_t>(info.dli_fbase);
    if (info.dli_sname)
      std::snprintf(buf, sizeof buf, "%s+0x%lx (%.120s+0x%lx)", base, static_cast<unsigned long>(off),
                    info.dli_sname,
                    static_cast<unsigned long>(reinterpret_cast<uintptr_t>(pcs[i]) -
                                               reinterpret_cast<uintptr_t>(info.dli_saddr)));
    else
      std::snprintf(buf, sizeof buf, "%s+0x%lx", base, static_cast<unsigned long>(off));
    if (shown++) out += " <- ";
    out += buf;
  }
  return out;
}

const char* where_name(Where w) {
  switch (w) {
    case Where::legacy: return "LEGACY";
    case Where::per_thread: return "per-thread";
    case Where::named: return "named";
    default: return "-";
  }
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  const bool rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const char* name = cb->functionName ? cb->functionName : "?";
  const Where w = rt ? runtime_where(id, cb->functionParams, name) : driver_where(id, cb->functionParams, name);
  long seq = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    Tally& t = (*g_tally)[std::string(rt ? "rt:" : "drv:") + name];
    ++t.calls;
    if (w == Where::legacy) { ++t.legacy; seq = ++g_legacy_seen[rt ? 0 : 1]; }
    if (w == Where::per_thread) ++t.per_thread;
    if (w == Where::named) ++t.named;
    if (!rt && w != Where::none) {
      const uintptr_t h = kernel_stream(id, cb->functionParams);
      if (h && (*g_kernels_by_stream)[h]++ == 0) (*g_first_caller)[h] = callers();
    }
  }
  const bool print = (w == Where::legacy && seq <= g_print_limit) || (g_print_all && w != Where::none);
  if (!print) return;
  const std::string who = callers();
  if (w == Where::legacy)
    std::fprintf(stderr, "[census] legacy %s #%ld %s <- %s\n", rt ? "rt" : "drv", seq, name, who.c_str());
  else
    std::fprintf(stderr, "[census] %s %s <- %s\n", where_name(w), name, who.c_str());
}

void report() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::pair<std::string, Tally>> rows(g_tally->begin(), g_tally->end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.legacy != b.second.legacy) return a.second.legacy > b.second.legacy;
    return a.second.calls > b.second.calls;
  });
  std::fprintf(stderr, "[census] pid %d at exit: %ld runtime and %ld driver calls named the legacy default stream "
               "(%zu functions seen)\n", static_cast<int>(getpid()), g_legacy_seen[0], g_legacy_seen[1],
               g_tally->size());
  std::fprintf(stderr, "[census] %-44s %9s %9s %9s %9s\n", "function", "calls", "legacy", "per-thr", "named");
  for (const auto& [name, t] : rows)
    std::fprintf(stderr, "[census] %-44s %9ld %9ld %9ld %9ld\n", name.c_str(), t.calls, t.legacy, t.per_thread,
                 t.named);
  // Eager kernel launches per named stream (a capture's launches count too: they name the capturing stream).
  for (const auto& [h, n] : *g_kernels_by_stream)
    std::fprintf(stderr, "[census] kernels on stream 0x%lx: %ld (first from %s)\n", static_cast<unsigned long>(h), n,
                 (*g_first_caller)[h].c_str());
}

long env_long(const char* key, long fallback) {
  const char* v = std::getenv(key);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library (before the first CUDA call returns).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  g_tally = new std::map<std::string, Tally>();
  g_kernels_by_stream = new std::map<uintptr_t, long>();
  g_first_caller = new std::map<uintptr_t, std::string>();
  g_print_limit = env_long("CENSUS_PRINT", 200);
  g_frames = static_cast<int>(env_long("CENSUS_FRAMES", 4));
  g_print_all = env_long("CENSUS_ALL", 0) != 0;
  CUptiResult r = cuptiSubscribe(&g_sub, on_call, nullptr);
  if (r == CUPTI_SUCCESS) r = cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  if (r == CUPTI_SUCCESS) r = cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
  if (r != CUPTI_SUCCESS) {
    const char* msg = nullptr;
    cuptiGetResultString(r, &msg);
    std::fprintf(stderr, "[census] CUPTI setup failed: %s\n", msg ? msg : "?");
    return 0;
  }
  std::atexit(report);
  std::fprintf(stderr, "[census] pid %d subscribed to the runtime and driver API callbacks\n",
               static_cast<int>(getpid()));
  return 1;
}
