// Power study of the speed gate on real hardware, torch-free (kgate.bench.speed_power).
// Synthetic kernels whose work is a number of units -- float4 elements streamed from one buffer to
// another (cold L2), or iterations of a compute loop -- are sized to run about 3, 30 and 300 us.
// For each size, a baseline is timed against itself (A/A) and against variants doing exactly 1%,
// 2% and 5% more work, with the CUPTI launch timer and speed::run_interleaved, repeatedly: the
// table gives detection and false-positive rates, block counts and the GPU / wall time each
// decision cost. --ncu-kernels only launches the base kernels, for comparing CUPTI medians with
// Nsight Compute's gpu__time_duration (bench/ncu_compare.sh).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "gates/speed/calibration.hpp"
#include "gates/speed/decision.hpp"
#include "gates/speed/interleave.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/timer.hpp"

namespace kgate::bench::power {
using speed::ArmTimer;
using speed::Block;
using speed::InterleaveOptions;
using speed::InterleaveResult;
using speed::run_interleaved;

/// Streams n float4 from `in` to `out` with a little arithmetic: one thread per element, so the
/// work is exactly proportional to n.
__device__ __forceinline__ void stream_body(const float4* __restrict__ in, float4* __restrict__ out,
                                            long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = in[i];
    v.x = fmaf(v.x, 1.0001f, 1.0f);
    v.y = fmaf(v.y, 1.0001f, 1.0f);
    v.z = fmaf(v.z, 1.0001f, 1.0f);
    v.w = fmaf(v.w, 1.0001f, 1.0f);
    out[i] = v;
  }
}

/// `iterations` rounds of four independent FMA chains per thread on a fixed grid: the work is
/// exactly proportional to the iteration count, and the result is stored so nothing is elided.
__device__ __forceinline__ void compute_body(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = a + 0.25f, c = a + 0.5f, d = a + 0.75f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, 0.9999f, 1e-4f);
    b = fmaf(b, 0.9999f, 2e-4f);
    c = fmaf(c, 0.9999f, 3e-4f);
    d = fmaf(d, 0.9999f, 4e-4f);
  }
  out[static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x] = a + b + c + d;
}

}  // namespace kgate::bench::power

// One kernel name per size slot, unmangled, so that Nsight Compute can filter and tell them apart.
#define KGATE_POWER_SLOT(N)                                                                  \
  extern "C" __global__ void kgate_power_stream_##N(const float4* __restrict__ in,           \
                                                    float4* __restrict__ out, long long n) { \
    kgate::bench::power::stream_body(in, out, n);                                            \
  }                                                                                          \
  extern "C" __global__ void kgate_power_compute_##N(float* out, int iterations) {           \
    kgate::bench::power::compute_body(out, iterations);                                      \
  }
// No work: its time under each tool is that tool's fixed cost per launch (--ncu-kernels).
extern "C" __global__ void kgate_power_empty() {}
KGATE_POWER_SLOT(0)
KGATE_POWER_SLOT(1)
KGATE_POWER_SLOT(2)
KGATE_POWER_SLOT(3)
KGATE_POWER_SLOT(4)
KGATE_POWER_SLOT(5)
#undef KGATE_POWER_SLOT

namespace kgate::bench::power {
namespace {

using StreamKernel = void (*)(const float4*, float4*, long long);
using ComputeKernel = void (*)(float*, int);
constexpr int kSlots = 6;
const StreamKernel kStreamKernels[kSlots] = {kgate_power_stream_0, kgate_power_stream_1,
                                             kgate_power_stream_2, kgate_power_stream_3,
                                             kgate_power_stream_4, kgate_power_stream_5};
const ComputeKernel kComputeKernels[kSlots] = {kgate_power_compute_0, kgate_power_compute_1,
                                               kgate_power_compute_2, kgate_power_compute_3,
                                               kgate_power_compute_4, kgate_power_compute_5};
constexpr int kThreads = 256;
constexpr int kComputeBlocksPerSm = 4;

enum class Kind { stream, compute };

const char* kind_name(Kind kind) { return kind == Kind::stream ? "stream" : "compute"; }

// ------------------------------------------------------------------------------------------------
// Options

/// The command line of kgate.bench.speed_power.
struct Options {
  Kind kind = Kind::stream;
  std::vector<double> sizes_us = {3, 30, 300};  ///< target base run times
  std::vector<double> slowdowns = {0.01, 0.02, 0.05};
  std::vector<double> deltas = {0.02, 0.005};
  int reps = 20;     ///< comparisons per injected slowdown and delta
  int aa_reps = 50;  ///< A/A comparisons per delta
  uint64_t seed = 1;
  bool flush_l2 = true;
  cuda::FlushMode flush_mode = cuda::FlushMode::read;
  double budget_s = InterleaveOptions{}.time_budget_s;  ///< timing budget of one comparison
  double max_seconds = 420;  ///< stop starting comparisons after this much wall time
  std::string timer = "cupti";
  std::string csv;  ///< one line per comparison, when set
  bool verbose = false;
  double launch_gap_us = -1;   ///< >= 0: the GPU idles this long before each timed launch
  bool ncu_kernels = false;    ///< only launch the base kernels (for Nsight Compute)
  int launches = 50;           ///< launches per kernel in --ncu-kernels mode
  std::vector<int64_t> units;  ///< fixed work per size: skips sizing
};

constexpr const char* kUsage =
    "usage: kgate.bench.speed_power [options]\n"
    "  Power study of the speed gate: synthetic kernels sized to the --sizes (us), timed against\n"
    "  themselves (A/A) and against variants doing --slowdowns more work, --reps times each.\n"
    "  --kind stream|compute   memory-streaming kernel (default) or a compute loop\n"
    "  --sizes 3,30,300        target base run times in us (at most 6)\n"
    "  --slowdowns 0.01,0.02,0.05  injected extra work (fractions)\n"
    "  --deltas 0.02,0.005     minimum effects the gate is run with (each row once per delta)\n"
    "  --reps N                comparisons per slowdown and delta (default 20)\n"
    "  --aa-reps N             A/A comparisons per delta (default 50)\n"
    "  --quick                 --reps 6 --aa-reps 12 (a smoke run)\n"
    "  --budget S              timing budget of one comparison in s (default 3)\n"
    "  --max-seconds S         start no comparison after S s of wall time (default 420)\n"
    "  --seed S                master seed of the block orders (default 1)\n"
    "  --warm                  no L2 flush between launches\n"
    "  --flush read|write      how the L2 is flushed: a read kernel (default, leaves clean lines)\n"
    "                          or cudaMemset (leaves dirty lines the next launch writes back)\n"
    "  --timer cupti|cupti-serial|events  launch timer (default cupti: concurrent-kernel records;\n"
    "                          cupti-serial: serialized kernel records); none only with "
    "--ncu-kernels\n"
    "  --launch-gap US         before each timed launch, synchronize and wait US microseconds, so\n"
    "                          it starts on a GPU idle that long (as under a profiler) instead of\n"
    "                          right behind the flush\n"
    "  --csv FILE              write one line per comparison\n"
    "  --verbose               one progress line per comparison\n"
    "  --ncu-kernels           launch each base kernel --launches times (flushed) and print the\n"
    "                          CUPTI median; with --units and --timer none under ncu\n"
    "  --launches K            launches per kernel with --ncu-kernels (default 50)\n"
    "  --units U,...           work per size (float4 elements or iterations) instead of sizing\n"
    "Exit codes: 0 done, 4 usage or device error, 5 internal error.\n";

template <typename T>
std::vector<T> parse_list(const std::string& flag, const std::string& text) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::istringstream parse(item);
    T value{};
    if (!(parse >> value) || !parse.eof()) throw_usage(flag + ": '" + item + "' is not a number");
    out.push_back(value);
  }
  if (out.empty()) throw_usage(flag + " needs a comma-separated list");
  return out;
}

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
  const auto list = parse_list<T>(flag, text);
  if (list.size() != 1) throw_usage(flag + " takes one number, got '" + text + "'");
  return list[0];
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw_usage(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--kind") {
      const std::string k = value();
      if (k != "stream" && k != "compute") throw_usage("--kind must be stream or compute");
      o.kind = k == "stream" ? Kind::stream : Kind::compute;
    } else if (flag == "--sizes") {
      o.sizes_us = parse_list<double>(flag, value());
    } else if (flag == "--slowdowns") {
      o.slowdowns = parse_list<double>(flag, value());
    } else if (flag == "--deltas") {
      o.deltas = parse_list<double>(flag, value());
    } else if (flag == "--reps") {
      o.reps = parse_number<int>(flag, value());
    } else if (flag == "--aa-reps") {
      o.aa_reps = parse_number<int>(flag, value());
    } else if (flag == "--quick") {
      o.reps = 6;
      o.aa_reps = 12;
    } else if (flag == "--budget") {
      o.budget_s = parse_number<double>(flag, value());
    } else if (flag == "--max-seconds") {
      o.max_seconds = parse_number<double>(flag, value());
    } else if (flag == "--seed") {
      o.seed = parse_number<uint64_t>(flag, value());
    } else if (flag == "--warm") {
      o.flush_l2 = false;
    } else if (flag == "--flush") {
      const std::string mode = value();
      if (mode != "read" && mode != "write") throw_usage("--flush must be read or write");
      o.flush_mode = mode == "read" ? cuda::FlushMode::read : cuda::FlushMode::write;
    } else if (flag == "--timer") {
      o.timer = value();
    } else if (flag == "--csv") {
      o.csv = value();
    } else if (flag == "--verbose") {
      o.verbose = true;
    } else if (flag == "--launch-gap") {
      o.launch_gap_us = parse_number<double>(flag, value());
      if (!(o.launch_gap_us >= 0 && o.launch_gap_us <= 1e6))
        throw_usage("--launch-gap must be in [0, 1e6] us");
    } else if (flag == "--ncu-kernels") {
      o.ncu_kernels = true;
    } else if (flag == "--launches") {
      o.launches = parse_number<int>(flag, value());
    } else if (flag == "--units") {
      o.units = parse_list<int64_t>(flag, value());
    } else {
      throw_usage("unknown option '" + flag + "' (see --help)");
    }
  }
  if (o.sizes_us.size() > static_cast<size_t>(kSlots))
    throw_usage("--sizes: at most " + std::to_string(kSlots) + " sizes");
  for (double s : o.sizes_us)
    if (!(s > 0)) throw_usage("--sizes: sizes must be > 0 us");
  for (double s : o.slowdowns)
    if (!(s > 0 && s <= 1)) throw_usage("--slowdowns: each must be in (0, 1]");
  for (double d : o.deltas)
    if (!(d >= 0 && d < 1)) throw_usage("--deltas: each must be in [0, 1)");
  if (o.reps < 1 || o.aa_reps < 1) throw_usage("--reps and --aa-reps must be >= 1");
  if (o.launches < 1) throw_usage("--launches must be >= 1");
  if (!(o.budget_s > 0)) throw_usage("--budget must be > 0");
  if (!o.units.empty() && o.units.size() != o.sizes_us.size())
    throw_usage("--units needs one value per size (" + std::to_string(o.sizes_us.size()) + ")");
  for (int64_t u : o.units)
    if (u < 1 || u > INT_MAX) throw_usage("--units: each must be in [1, 2^31)");
  if (o.timer != "cupti" && o.timer != "cupti-serial" && o.timer != "events" && o.timer != "none")
    throw_usage("--timer must be cupti, cupti-serial, events or none");
  if (o.timer == "none" && !o.ncu_kernels) throw_usage("--timer none only with --ncu-kernels");
  if (o.timer == "none" && o.units.empty())
    throw_usage(
        "--timer none cannot size the kernels: pass --units (a run with a timer prints them)");
  return o;
}

// ------------------------------------------------------------------------------------------------
// Workloads

/// One size slot's kernel and its device buffers; work is given in units (float4 elements for
/// stream, loop iterations for compute). Both arms stream the same buffers: on the H200 an A/A
/// comparison over two separately allocated buffer pairs measured the second pair +6.9% slower at
/// 3 us and +0.9% at 30 us (20/20 false regressions at delta 0.5%), a placement effect, not work.
class Workload {
 public:
  Workload(Kind kind, int slot, cudaStream_t stream, int sms)
      : kind_(kind),
        slot_(slot),
        stream_(stream),
        compute_blocks_(std::max(1, sms) * kComputeBlocksPerSm) {}
  ~Workload() { release(); }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  /// The kernel's name as profilers show it.
  std::string kernel_name() const {
    return std::string("kgate_power_") + kind_name(kind_) + "_" + std::to_string(slot_);
  }
  Kind kind() const { return kind_; }
  int slot() const { return slot_; }
  /// What one unit of work is, for messages.
  const char* unit() const { return kind_ == Kind::stream ? "float4" : "iterations"; }
  /// The smallest and largest work the kernel is run with.
  int64_t min_units() const { return kind_ == Kind::stream ? 4096 : 100; }
  int64_t max_units() const {
    if (kind_ == Kind::compute) return INT_MAX;
    size_t free_bytes = 0, total_bytes = 0;
    KGATE_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
    // in + out, with room for the L2 flush buffer and the CUDA context.
    const double usable = 0.7 * static_cast<double>(free_bytes + reserved_bytes());
    return std::min<int64_t>(INT_MAX, static_cast<int64_t>(usable / (2.0 * sizeof(float4))));
  }

  /// Makes the buffers hold `units` of work (grows, never shrinks).
  void reserve(int64_t units) {
    if (kind_ == Kind::compute) units = 1;  // the output is one float per thread, whatever the work
    if (units <= capacity_) return;
    release();
    const size_t bytes = kind_ == Kind::stream
                             ? static_cast<size_t>(units) * sizeof(float4)
                             : static_cast<size_t>(compute_blocks_) * kThreads * sizeof(float);
    for (int arm = 0; arm < 1; ++arm) {
      for (int which = 0; which < (kind_ == Kind::stream ? 2 : 1); ++which) {
        void* p = nullptr;
        const cudaError_t rc = cudaMalloc(&p, bytes);
        if (rc != cudaSuccess) {
          cudaGetLastError();
          throw Error(ErrorKind::device,
                      "cudaMalloc of " + std::to_string(bytes >> 20) + " MiB for " + kernel_name() +
                          " failed: " + cudaGetErrorString(rc) + " (choose smaller --sizes)");
        }
        buffers_[arm][which] = p;
        KGATE_CUDA_CALL(cudaMemsetAsync(p, 0, bytes, stream_));
      }
    }
    bytes_ = bytes;
    capacity_ = units;
    KGATE_CUDA_CALL(cudaStreamSynchronize(stream_));
  }

  /// Launches `units` of work for `arm` (both arms share the buffers); checks the launch.
  void launch(int /*arm*/, int64_t units) {
    constexpr int arm = 0;
    if (kind_ == Kind::stream) {
      if (units > capacity_) throw Error(ErrorKind::internal, "launch beyond the reserved buffers");
      const long long n = units;
      const unsigned grid = static_cast<unsigned>((n + kThreads - 1) / kThreads);
      kStreamKernels[slot_]<<<grid, kThreads, 0, stream_>>>(
          static_cast<const float4*>(buffers_[arm][0]), static_cast<float4*>(buffers_[arm][1]), n);
    } else {
      if (capacity_ < 1) throw Error(ErrorKind::internal, "launch before reserve");
      kComputeKernels[slot_]<<<compute_blocks_, kThreads, 0, stream_>>>(
          static_cast<float*>(buffers_[arm][0]), static_cast<int>(units));
    }
    KGATE_CUDA_CALL(cudaGetLastError());
  }

 private:
  size_t reserved_bytes() const { return capacity_ > 0 ? 2 * bytes_ : 0; }
  void release() {
    for (auto& arm : buffers_)
      for (void*& p : arm) {
        if (p) KGATE_CUDA_CALL_NOTHROW(cudaFree(p));
        p = nullptr;
      }
    capacity_ = 0;
    bytes_ = 0;
  }

  Kind kind_;
  int slot_;
  cudaStream_t stream_;
  int compute_blocks_;
  void* buffers_[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};
  int64_t capacity_ = 0;
  size_t bytes_ = 0;
};

/// The device, a stream, the launch timer and the L2 flusher, with their clean-up.
struct Bench {
  cudaStream_t stream = nullptr;
  cuda::DeviceInfo info;
  std::unique_ptr<cuda::LaunchTimer> timer;  ///< null with --timer none
  std::unique_ptr<cuda::L2Flusher> flusher;  ///< null with --warm
  std::unique_ptr<cuda::Nvml> nvml;
  double launch_gap_us = -1;

  explicit Bench(const Options& o) {
    std::string why;
    if (!cuda::device_available(&why))
      throw Error(ErrorKind::device, "no usable CUDA device: " + why);
    info = cuda::device_info(0);
    KGATE_CUDA_CALL(cudaSetDevice(0));
    KGATE_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaFuncAttributes attributes{};
    const cudaError_t rc = cudaFuncGetAttributes(&attributes, kgate_power_stream_0);
    if (rc != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorKind::device,
                  std::string("the power kernels cannot run on this device (sm_") +
                      std::to_string(info.sm_major) + std::to_string(info.sm_minor) +
                      "): " + cudaGetErrorString(rc) +
                      "; rebuild with -DCMAKE_CUDA_ARCHITECTURES matching the GPU");
    }
    if (o.timer == "cupti") timer = cuda::make_cupti_timer();
    if (o.timer == "cupti-serial") timer = cuda::make_cupti_timer(cuda::CuptiRecords::serialized);
    if (o.timer == "events") timer = cuda::make_event_timer(stream);
    if (o.flush_l2) flusher = std::make_unique<cuda::L2Flusher>(stream, o.flush_mode);
    nvml = std::make_unique<cuda::Nvml>();
    launch_gap_us = o.launch_gap_us;
  }
  ~Bench() {
    timer.reset();
    flusher.reset();
    if (stream) KGATE_CUDA_CALL_NOTHROW(cudaStreamDestroy(stream));
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  std::function<void()> between() {
    if (!flusher && launch_gap_us < 0) return {};
    return [this] {
      if (flusher) flusher->flush();
      if (launch_gap_us >= 0) {
        KGATE_CUDA_CALL(cudaStreamSynchronize(stream));
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::duration<double, std::micro>(launch_gap_us);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    };
  }

  /// The SM clock NVML reads now, as text ("-" without NVML).
  std::string clock_now() const {
    if (!nvml || !nvml->available()) return "-";
    const auto sample = nvml->sample();
    return sample ? std::to_string(sample->sm_clock_mhz) : "-";
  }

  /// Per-launch device times (ns) of `count` launches of `units` on `arm`.
  std::vector<double> time(Workload& w, int arm, int64_t units, int count) {
    return timer->time([&w, arm, units] { w.launch(arm, units); }, count, between());
  }

  double median_ns(Workload& w, int64_t units, int count) {
    return speed::median(time(w, 0, units, count));
  }
};

/// Work units that make `w` run about `target_us`: a line through two probes (fixed cost plus
/// cost per unit), then up to three corrections measured at the estimate.
int64_t size_for(Bench& bench, Workload& w, double target_us, double* base_us) {
  const bool stream = w.kind() == Kind::stream;
  const int64_t lo = stream ? int64_t{1} << 14 : 256;
  const int64_t hi = std::min<int64_t>(stream ? int64_t{1} << 24 : 65536, w.max_units());
  w.reserve(hi);
  bench.median_ns(w, hi, 5);  // first launches load the module and wake the clocks
  const double t_lo = bench.median_ns(w, lo, 15), t_hi = bench.median_ns(w, hi, 15);
  const double per_unit = std::max((t_hi - t_lo) / static_cast<double>(hi - lo), 1e-6);
  const double fixed = t_lo - per_unit * static_cast<double>(lo);
  const double target = target_us * 1e3;
  auto clamp = [&](double u) {
    return std::clamp<int64_t>(std::llround(u), w.min_units(), w.max_units());
  };
  int64_t units = clamp((target - fixed) / per_unit);
  double t = 0;
  for (int step = 0; step < 4; ++step) {
    w.reserve(units);
    t = bench.median_ns(w, units, 15);
    if (std::fabs(t - target) <= 0.02 * target) break;
    const int64_t next = clamp(static_cast<double>(units) + (target - t) / per_unit);
    if (next == units) break;
    units = next;
  }
  *base_us = t / 1e3;
  return units;
}

// ------------------------------------------------------------------------------------------------
// Interleaved comparisons

/// Baseline (arm 0) and candidate (arm 1) through the launch timer, for run_interleaved: counts
/// the device time it measured and reads NVML clocks after each half-block.
class PairTimer final : public ArmTimer {
 public:
  PairTimer(Bench& bench, Workload& w, int64_t base_units, int64_t candidate_units)
      : bench_(bench),
        w_(w),
        units_{base_units, candidate_units},
        start_(std::chrono::steady_clock::now()) {}

  std::vector<double> measure(int arm, int launches) override {
    std::vector<double> ns = bench_.time(w_, arm, units_[arm], launches);
    for (double x : ns) device_ns_ += x;
    if (bench_.nvml && bench_.nvml->available()) {
      if (const auto sample = bench_.nvml->sample()) {
        clocks_.push_back(static_cast<double>(sample->sm_clock_mhz));
        if (sample->throttled() && !disturbance_) disturbance_ = sample->describe();
      }
    }
    return ns;
  }
  std::optional<std::string> block_disturbance() override {
    auto d = disturbance_;
    disturbance_.reset();
    return d;
  }
  double seconds_used() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double device_seconds() const { return device_ns_ * 1e-9; }
  double median_clock_mhz() const { return speed::percentile(clocks_, 0.5); }

 private:
  Bench& bench_;
  Workload& w_;
  int64_t units_[2];
  std::chrono::steady_clock::time_point start_;
  double device_ns_ = 0;
  std::vector<double> clocks_;
  std::optional<std::string> disturbance_;
};

/// One interleaved comparison, as the table needs it.
struct Comparison {
  speed::Decision decision = speed::Decision::inconclusive;
  bool invalid = false;
  double hodges_lehmann = 0;  ///< ln ratio estimate
  double lower = 0, upper = 0;
  int blocks = 0, kept = 0, stages = 0;
  double wall_s = 0, device_s = 0;
  double base_ns = 0, candidate_ns = 0;  ///< medians over kept blocks
  double clock_mhz = 0;
};

Comparison compare(Bench& bench, Workload& w, int64_t base_units, int64_t candidate_units,
                   const InterleaveOptions& options, uint64_t seed) {
  PairTimer pair(bench, w, base_units, candidate_units);
  Rng rng(seed);
  const InterleaveResult r = run_interleaved(pair, options, rng);
  Comparison c;
  c.decision = r.decision.decision;
  c.invalid = r.invalid;
  c.hodges_lehmann = r.decision.hodges_lehmann;
  c.lower = r.decision.lower;
  c.upper = r.decision.upper;
  c.blocks = static_cast<int>(r.blocks.size());
  c.stages = r.stages;
  c.wall_s = r.seconds;
  c.device_s = pair.device_seconds();
  c.clock_mhz = pair.median_clock_mhz();
  std::vector<double> a, b;
  for (const Block& block : r.blocks) {
    if (block.dropped) continue;
    ++c.kept;
    a.insert(a.end(), block.a.begin(), block.a.end());
    b.insert(b.end(), block.b.begin(), block.b.end());
  }
  c.base_ns = speed::median(a);
  c.candidate_ns = speed::median(b);
  return c;
}

/// Both arms in batches of 10 until their medians move less than 2% (at most 20 batches).
void warm_up(Bench& bench, Workload& w, int64_t base_units, int64_t candidate_units) {
  double previous[2] = {0, 0};
  for (int batch = 0; batch < 20; ++batch) {
    bool stable = batch > 0;
    for (int arm = 0; arm < 2; ++arm) {
      const double m = speed::median(bench.time(w, arm, arm ? candidate_units : base_units, 10));
      stable = stable && std::fabs(m - previous[arm]) <= 0.02 * previous[arm];
      previous[arm] = m;
    }
    if (stable) return;
  }
}

/// A row of the table: one size, one injected slowdown, one delta, `reps` comparisons.
struct Row {
  int size = 0;
  double target_us = 0;
  int64_t base_units = 0, candidate_units = 0;
  double slowdown = 0;  ///< exact extra work, candidate_units / base_units - 1
  double delta = 0;
  int planned = 0;
  std::vector<Comparison> runs;
};

struct RowSummary {
  int n = 0, regressions = 0, passes = 0, inconclusive = 0, invalid = 0;
  speed::ProportionInterval interval;  ///< Clopper-Pearson 95% of the REGRESSION share
  double base_us = 0, observed = 0, blocks = 0, device_ms = 0, wall_s = 0, wall_max_s = 0;
  double clock_mhz = 0;
};

RowSummary summarize(const Row& row) {
  RowSummary s;
  s.n = static_cast<int>(row.runs.size());
  std::vector<double> base, ratio, clocks;
  for (const Comparison& c : row.runs) {
    if (c.invalid) ++s.invalid;
    else if (c.decision == speed::Decision::regression) ++s.regressions;
    else if (c.decision == speed::Decision::pass) ++s.passes;
    else ++s.inconclusive;
    if (c.base_ns > 0) base.push_back(c.base_ns);
    ratio.push_back(std::expm1(c.hodges_lehmann));
    if (std::isfinite(c.clock_mhz)) clocks.push_back(c.clock_mhz);
    s.blocks += c.blocks;
    s.device_ms += c.device_s * 1e3;
    s.wall_s += c.wall_s;
    s.wall_max_s = std::max(s.wall_max_s, c.wall_s);
  }
  if (s.n > 0) {
    s.interval = speed::clopper_pearson_interval(s.regressions, s.n);
    s.blocks /= s.n;
    s.device_ms /= s.n;
    s.wall_s /= s.n;
  }
  s.base_us = speed::percentile(base, 0.5) / 1e3;
  s.observed = speed::percentile(ratio, 0.5);
  s.clock_mhz = speed::percentile(clocks, 0.5);
  return s;
}

std::string fmt(const char* spec, double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::string size_label(double us) { return fmt("%gus", us); }

const char* decision_label(const Comparison& c) {
  if (c.invalid) return "INVALID";
  switch (c.decision) {
    case speed::Decision::regression:
      return "REGRESSION";
    case speed::Decision::pass:
      return "PASS";
    case speed::Decision::inconclusive:
      break;
  }
  return "INCONCLUSIVE";
}

void print_header() {
  std::printf("%-7s %-7s %8s %6s %6s %5s %7s %-20s %6s %6s %4s %7s %7s %8s %7s %7s %6s\n", "size",
              "kind", "base_us", "inj%", "delta%", "reps", "REGR", "rate [95% CI]", "PASS%", "INC%",
              "INV", "obs%", "blocks", "dev_ms", "wall_s", "wall_mx", "MHz");
}

void print_row(const Row& row, Kind kind) {
  const RowSummary s = summarize(row);
  const std::string rate = s.n > 0 ? fmt("%.1f%%", 100.0 * s.regressions / s.n) + " [" +
                                         fmt("%.1f", 100 * s.interval.lower) + ", " +
                                         fmt("%.1f", 100 * s.interval.upper) + "]"
                                   : "-";
  const std::string reps = std::to_string(s.n) + (s.n < row.planned ? "*" : "");
  std::printf("%-7s %-7s %8.2f %6s %6.2f %5s %7s %-20s %6s %6s %4d %7s %7s %8s %7s %7s %6s\n",
              size_label(row.target_us).c_str(), kind_name(kind), s.base_us,
              fmt("%+.2f", 100 * row.slowdown).c_str(), 100 * row.delta, reps.c_str(),
              (std::to_string(s.regressions) + "/" + std::to_string(s.n)).c_str(), rate.c_str(),
              fmt("%.1f", s.n ? 100.0 * s.passes / s.n : NAN).c_str(),
              fmt("%.1f", s.n ? 100.0 * s.inconclusive / s.n : NAN).c_str(), s.invalid,
              fmt("%+.2f", 100 * s.observed).c_str(), fmt("%.1f", s.blocks).c_str(),
              fmt("%.2f", s.device_ms).c_str(), fmt("%.3f", s.wall_s).c_str(),
              fmt("%.3f", s.wall_max_s).c_str(), fmt("%.0f", s.clock_mhz).c_str());
}

/// Pooled rate over rows matching `keep`, for the goal lines.
void print_goal(const std::vector<Row>& rows, const std::string& what, const std::string& goal,
                const std::function<bool(const Row&)>& keep) {
  int hits = 0, n = 0;
  double wall = 0, wall_max = 0, device = 0;
  for (const Row& row : rows) {
    if (!keep(row)) continue;
    for (const Comparison& c : row.runs) {
      ++n;
      hits += !c.invalid && c.decision == speed::Decision::regression;
      wall += c.wall_s;
      device += c.device_s;
      wall_max = std::max(wall_max, c.wall_s);
    }
  }
  if (n == 0) return;
  const auto ci = speed::clopper_pearson_interval(hits, n);
  std::printf(
      "%s: %d/%d = %.1f%% [95%% CI %.1f%%, %.1f%%]; per decision: wall %.3f s mean, %.3f s "
      "max, kernel time %.1f ms  (%s)\n",
      what.c_str(), hits, n, 100.0 * hits / n, 100 * ci.lower, 100 * ci.upper, wall / n, wall_max,
      1e3 * device / n, goal.c_str());
}

double elapsed_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Sizes every slot: its units and measured base time. With --units, only measures (if it can).
std::vector<int64_t> size_all(Bench& bench, const Options& o, std::vector<double>* base_us) {
  std::vector<int64_t> units;
  for (size_t i = 0; i < o.sizes_us.size(); ++i) {
    Workload w(o.kind, static_cast<int>(i), bench.stream, bench.info.multiprocessors);
    double us = NAN;
    if (o.units.empty()) {
      units.push_back(size_for(bench, w, o.sizes_us[i], &us));
    } else {
      units.push_back(o.units[i]);
      if (bench.timer) {
        w.reserve(o.units[i]);
        bench.median_ns(w, o.units[i], 5);
        us = bench.median_ns(w, o.units[i], 15) / 1e3;
      }
    }
    base_us->push_back(us);
    std::fprintf(stderr, "sizing: %s %s: %lld %s, base %s us%s\n",
                 size_label(o.sizes_us[i]).c_str(), w.kernel_name().c_str(),
                 static_cast<long long>(units.back()), w.unit(), fmt("%.2f", us).c_str(),
                 std::isfinite(us) && std::fabs(us - o.sizes_us[i]) > 0.1 * o.sizes_us[i]
                     ? " (far from the target: the kernel's floor or the memory limit)"
                     : "");
  }
  std::string list;
  for (int64_t u : units) list += (list.empty() ? "" : ",") + std::to_string(u);
  std::printf("sizing: --units %s\n", list.c_str());
  return units;
}

int run_ncu_kernels(const Options& o) {
  Bench bench(o);
  const std::string gap =
      o.launch_gap_us < 0 ? "" : fmt(" GPU idle %g us before each launch,", o.launch_gap_us);
  std::printf("ncu-kernels: %s, timer %s, %s L2,%s %d launches per kernel\n",
              bench.info.name.c_str(), bench.timer ? bench.timer->name() : "none",
              !o.flush_l2                             ? "warm"
              : o.flush_mode == cuda::FlushMode::read ? "read-flushed"
                                                      : "write-flushed",
              gap.c_str(), o.launches);
  std::vector<double> base_us;
  const auto units = size_all(bench, o, &base_us);
  for (size_t i = 0; i < units.size(); ++i) {
    Workload w(o.kind, static_cast<int>(i), bench.stream, bench.info.multiprocessors);
    w.reserve(units[i]);
    std::string median = "-";
    if (bench.timer) {
      median = fmt("%.1f", bench.median_ns(w, units[i], o.launches));
    } else {
      const auto between = bench.between();
      for (int k = 0; k < o.launches; ++k) {
        if (between) between();
        w.launch(0, units[i]);
      }
      KGATE_CUDA_CALL(cudaStreamSynchronize(bench.stream));
    }
    std::printf(
        "ncu-kernel name=%s target_us=%g units=%lld launches=%d cupti_median_ns=%s "
        "sm_clock_mhz=%s\n",
        w.kernel_name().c_str(), o.sizes_us[i], static_cast<long long>(units[i]), o.launches,
        median.c_str(), bench.clock_now().c_str());
  }
  // An empty kernel, launched the same way: the difference of its two medians is the fixed cost one
  // tool counts and the other does not.
  const auto empty = [&bench] {
    kgate_power_empty<<<1, 32, 0, bench.stream>>>();
    KGATE_CUDA_CALL(cudaGetLastError());
  };
  std::string median = "-";
  if (bench.timer) {
    median = fmt("%.1f", speed::median(bench.timer->time(empty, o.launches, bench.between())));
  } else {
    const auto between = bench.between();
    for (int k = 0; k < o.launches; ++k) {
      if (between) between();
      empty();
    }
    KGATE_CUDA_CALL(cudaStreamSynchronize(bench.stream));
  }
  std::printf(
      "ncu-kernel name=kgate_power_empty target_us=0 units=0 launches=%d cupti_median_ns=%s "
      "sm_clock_mhz=%s\n",
      o.launches, median.c_str(), bench.clock_now().c_str());
  return 0;
}

/// The result table and the lines that compare pooled rates with the goals of the issue.
void print_results(const Options& o, const std::vector<Row>& rows,
                   const std::vector<double>& base_us, bool truncated) {
  std::printf("\n");
  print_header();
  for (const Row& row : rows) print_row(row, o.kind);
  std::printf(
      "\nREGR = REGRESSION decisions (for inj +0.00: A/A false positives); rate = REGR share "
      "with a Clopper-Pearson 95%% interval;\nobs%% = median Hodges-Lehmann slowdown; "
      "dev_ms = kernel time per decision (CUPTI); wall_s / wall_mx = mean / max wall time "
      "per decision%s\n\n",
      truncated ? "; * = fewer reps than planned (--max-seconds reached)" : "");
  for (double delta : o.deltas) {
    print_goal(rows, "A/A false-positive rate at delta " + fmt("%.1f%%", 100 * delta), "goal <= 1%",
               [&](const Row& r) { return r.slowdown == 0 && r.delta == delta; });
  }
  for (double s : o.slowdowns) {
    for (double delta : o.deltas) {
      print_goal(rows,
                 "detection of +" + fmt("%g", 100 * s) + "% work at delta " +
                     fmt("%.1f%%", 100 * delta) + ", kernels >= 5 us",
                 s == 0.02 ? "goal >= 95% within <= 3 s" : "for reference", [&](const Row& r) {
                   return r.slowdown > 0 && std::fabs(r.slowdown - s) < 0.25 * s &&
                          r.delta == delta && std::isfinite(base_us[static_cast<size_t>(r.size)]) &&
                          base_us[static_cast<size_t>(r.size)] >= 5;
                 });
    }
  }
}

int run_study(const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Bench bench(o);
  InterleaveOptions defaults;
  defaults.time_budget_s = o.budget_s;
  std::printf("kgate power study: %s (sm_%d%d, %d SMs, L2 %lld MiB), driver %s, runtime %s\n",
              bench.info.name.c_str(), bench.info.sm_major, bench.info.sm_minor,
              bench.info.multiprocessors, static_cast<long long>(bench.info.l2_bytes >> 20),
              bench.info.driver.c_str(), bench.info.runtime.c_str());
  std::printf(
      "timer %s, %s L2, alpha %g, <= %d stages x %d blocks x %d launches/arm, budget %g s, "
      "NVML %s\n",
      bench.timer->name(), o.flush_l2 ? "flushed" : "warm", defaults.alpha, defaults.max_stages,
      defaults.blocks_per_stage, defaults.launches_per_arm, o.budget_s,
      bench.nvml->available() ? "on" : bench.nvml->unavailable_reason().c_str());
  std::fflush(stdout);

  std::vector<double> base_us;
  const auto units = size_all(bench, o, &base_us);
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw_usage("--csv: cannot write " + o.csv);
    csv.precision(9);
    csv << "size_us,kind,kernel,base_units,candidate_units,slowdown,delta,rep,decision,hl_ratio,"
           "ratio_lower,ratio_upper,blocks,kept_blocks,stages,wall_s,device_s,base_ns,candidate_ns,"
           "sm_clock_mhz\n";
  }

  // The plan: per size, per delta, A/A then each injected slowdown.
  std::vector<Row> plan;
  int comparisons = 0;
  for (size_t si = 0; si < o.sizes_us.size(); ++si) {
    for (double delta : o.deltas) {
      std::vector<double> injected = {0};
      injected.insert(injected.end(), o.slowdowns.begin(), o.slowdowns.end());
      for (double s : injected) {
        Row row;
        row.size = static_cast<int>(si);
        row.target_us = o.sizes_us[si];
        row.base_units = units[si];
        row.candidate_units =
            s == 0 ? units[si] : std::llround(static_cast<double>(units[si]) * (1 + s));
        row.slowdown =
            static_cast<double>(row.candidate_units) / static_cast<double>(row.base_units) - 1;
        row.delta = delta;
        row.planned = s == 0 ? o.aa_reps : o.reps;
        comparisons += row.planned;
        plan.push_back(row);
      }
    }
  }
  std::fprintf(
      stderr,
      "plan: %zu rows, %d comparisons (each <= %g s of timing); no comparison starts after "
      "%g s\n",
      plan.size(), comparisons, o.budget_s, o.max_seconds);

  std::vector<Row> rows;
  bool truncated = false;
  try {
    std::unique_ptr<Workload> w;
    for (const Row& spec : plan) {
      if (!w || spec.size != w->slot()) {
        w.reset();  // free the previous size's buffers first
        w = std::make_unique<Workload>(o.kind, spec.size, bench.stream, bench.info.multiprocessors);
        const double largest = *std::max_element(o.slowdowns.begin(), o.slowdowns.end());
        w->reserve(std::llround(static_cast<double>(spec.base_units) * (1 + largest)) + 1);
      }
      rows.push_back(spec);
      Row& row = rows.back();
      InterleaveOptions options = defaults;
      options.delta = row.delta;
      warm_up(bench, *w, row.base_units, row.candidate_units);
      const std::string label = size_label(row.target_us) + "/" + kind_name(o.kind) + "/" +
                                fmt("%.4f", row.slowdown) + "/" + fmt("%g", row.delta);
      for (int rep = 0; rep < row.planned; ++rep) {
        if (elapsed_s(t0) > o.max_seconds) {
          truncated = true;
          break;
        }
        const Comparison c =
            compare(bench, *w, row.base_units, row.candidate_units, options,
                    derive_seed(o.seed, "power/" + label, static_cast<uint64_t>(rep)));
        row.runs.push_back(c);
        if (o.verbose) {
          std::fprintf(stderr, "  %s rep %d: %s x%.4f [%.4f, %.4f] %d blocks %.3f s\n",
                       label.c_str(), rep + 1, decision_label(c), std::exp(c.hodges_lehmann),
                       std::exp(c.lower), std::exp(c.upper), c.blocks, c.wall_s);
        }
        if (csv.is_open()) {
          csv << row.target_us << ',' << kind_name(o.kind) << ',' << w->kernel_name() << ','
              << row.base_units << ',' << row.candidate_units << ',' << row.slowdown << ','
              << row.delta << ',' << rep << ',' << decision_label(c) << ','
              << std::exp(c.hodges_lehmann) << ',' << std::exp(c.lower) << ',' << std::exp(c.upper)
              << ',' << c.blocks << ',' << c.kept << ',' << c.stages << ',' << c.wall_s << ','
              << c.device_s << ',' << c.base_ns << ',' << c.candidate_ns << ',' << c.clock_mhz
              << '\n';
        }
      }
      if (csv.is_open()) csv.flush();
      const RowSummary rs = summarize(row);
      std::fprintf(
          stderr,
          "[%4.0f s] %s %s inj %+.2f%% delta %.1f%%: %d reps: REGR %d PASS %d INC %d INV %d, "
          "%.1f blocks, %.3f s/decision%s\n",
          elapsed_s(t0), size_label(row.target_us).c_str(), kind_name(o.kind), 100 * row.slowdown,
          100 * row.delta, rs.n, rs.regressions, rs.passes, rs.inconclusive, rs.invalid, rs.blocks,
          rs.wall_s, truncated ? " (stopped: --max-seconds)" : "");
      if (row.runs.empty()) rows.pop_back();
      if (truncated) break;
    }
  } catch (const Error& e) {
    // Keep what was measured: the table of the rows so far, then the error.
    while (!rows.empty() && rows.back().runs.empty()) rows.pop_back();
    print_results(o, rows, base_us, true);
    std::printf("\nstopped by an error after %.0f s (the rows above are complete up to it)\n",
                elapsed_s(t0));
    throw;
  }
  print_results(o, rows, base_us, truncated);
  std::printf(
      "\ntotal wall time %.0f s%s\n", elapsed_s(t0),
      truncated ? " (stopped early by --max-seconds: rerun the missing sizes with --sizes)" : "");
  return 0;
}

}  // namespace
}  // namespace kgate::bench::power

int main(int argc, char** argv) {
  using namespace kgate;
  // Line-buffered even into a pipe: progress and sizing lines survive a killed run.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    const auto options = bench::power::parse_options(argc, argv);
    return options.ncu_kernels ? bench::power::run_ncu_kernels(options)
                               : bench::power::run_study(options);
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate.bench.speed_power: error: %s\n", e.what());
    return e.kind() == ErrorKind::internal ? 5 : 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kgate.bench.speed_power: internal error: %s\n", e.what());
    return 5;
  }
}
