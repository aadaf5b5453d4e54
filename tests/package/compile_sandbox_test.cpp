// A package's source is hostile input. Each probe of the red-team list is a test here: an #include
// (or __has_include) of the runner's files must reveal nothing, a FIFO or a macro bomb must not
// hang the compile, hard links are refused, and --require-sandbox refuses to compile unconfined.
// NVRTC runs without a GPU, so these run on CI machines.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "package_test_util.hpp"
#include "runtime/package/nvrtc_cache.hpp"
#include "runtime/package/nvrtc_worker.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::package {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

constexpr const char* kSecret = "kgate-test-secret-7f3a9c";
constexpr const char* kKernel = "\nextern \"C\" __global__ void probe(float* x) { x[0] = 1.0f; }\n";

json probe_manifest() {
  return json::parse(R"J({
    "format": "kgate-package/1", "name": "probe", "version": "0.1.0", "op": "softmax",
    "sources": ["probe.cu"], "symbols": {"N": ["x", -1]},
    "launches": [{"kernel": "probe", "grid": [1], "block": [32], "args": [{"tensor": "y"}]}],
    "guard": {"dtypes": ["f32"]}
  })J");
}

struct Probe {
  TempDir pkg, cache;
  CompileOptions options;
  explicit Probe(const std::string& source) {
    pkg.write("probe.cu", source + kKernel);
    pkg.write_json("kgate.json", probe_manifest());
    options.cache_dir = cache.path();
    options.use_cache = false;
  }
  /// The compile's problem text; empty when it compiled.
  std::string compile(CompileResult* out = nullptr) {
    CompileResult r;
    ManifestProblem problem;
    PackageManifest m;
    try {
      m = load_manifest(pkg.path());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::package) throw;
      return e.what();  // refused before any compile
    }
    const bool ok = try_compile_package(m, options, r, problem);
    if (out) *out = r;
    return ok ? std::string() : format_problem(problem);
  }
};

/// The sandbox this machine gives a compile (probed once, with a package that compiles).
SandboxKind machine_sandbox() {
  static const SandboxKind kind = [] {
    Probe p("");
    CompileResult r;
    EXPECT_EQ(p.compile(&r), "");
    return r.sandbox;
  }();
  return kind;
}

/// Probes that only a sandbox can stop are skipped, visibly, where none can be entered.
#define KGATE_SKIP_WITHOUT_SANDBOX()                                                      \
  do {                                                                                    \
    if (machine_sandbox() == SandboxKind::none)                                           \
      GTEST_SKIP() << "no compile sandbox can be entered here: this probe would succeed"; \
  } while (0)

/// Sets an environment variable for the test's duration.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

TEST(CompileSandbox, ThisMachineHasOne) {
  // CI machines and the GPU machine allow user namespaces or Landlock; say which one is used.
  const SandboxKind kind = machine_sandbox();
  std::printf("compile sandbox here: %s\n", sandbox_kind_name(kind));
  if (kind == SandboxKind::none)
    GTEST_SKIP() << "no compile sandbox can be entered on this machine (see the warning above)";
  EXPECT_NE(kind, SandboxKind::none);
}

TEST(CompileSandbox, EnvironmentIsNotReadable) {
  ScopedEnv secret("KGATE_TEST_SECRET", kSecret);
  Probe p("#include \"/proc/self/environ\"\n");
  const std::string err = p.compile();
  EXPECT_NE(err.find("cannot open source file \"/proc/self/environ\""), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
  EXPECT_EQ(err.find("KGATE_TEST_SECRET"), std::string::npos) << err;
}

TEST(CompileSandbox, EnvironmentOfTheParentIsNotReadable) {
  KGATE_SKIP_WITHOUT_SANDBOX();
  // /proc/<parent>/environ, the path a worker with an empty environment of its own would try next.
  ScopedEnv secret("KGATE_TEST_SECRET", kSecret);
  Probe p("#include \"/proc/" + std::to_string(::getpid()) + "/environ\"\n");
  const std::string err = p.compile();
  EXPECT_NE(err.find("cannot open source file"), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
}

TEST(CompileSandbox, SystemFilesAreNotReadable) {
  KGATE_SKIP_WITHOUT_SANDBOX();
  Probe p("#include \"/etc/passwd\"\n");
  const std::string err = p.compile();
  EXPECT_NE(err.find("cannot open source file \"/etc/passwd\""), std::string::npos) << err;
  EXPECT_EQ(err.find("root:"), std::string::npos) << err;
}

TEST(CompileSandbox, FilesOutsideAreNotReachedThroughTheToolkitIncludePath) {
  KGATE_SKIP_WITHOUT_SANDBOX();
  TempDir outside;
  outside.write("secret.h", std::string("#error ") + kSecret + "\n");
  // <../../...> resolved against kgate's own -I (the toolkit's include directory).
  std::string up;
  for (int i = 0; i < 16; ++i) up += "../";
  Probe p("#include <" + up + outside.path().relative_path().string() + "/secret.h>\n");
  const std::string err = p.compile();
  EXPECT_NE(err.find("cannot open source file"), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
}

TEST(CompileSandbox, MacroBuiltPathsAreNotReadable) {
  ScopedEnv secret("KGATE_TEST_SECRET", kSecret);
  Probe p(
      "#define KG_STR(x) #x\n#define KG_PATH(x) KG_STR(/proc/self/x)\n#include KG_PATH(environ)\n");
  const std::string err = p.compile();
  EXPECT_NE(err.find("cannot open source file"), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
}

TEST(CompileSandbox, MacroValuesCompileButCannotOpenFiles) {
  ScopedEnv secret("KGATE_TEST_SECRET", kSecret);
  Probe ok("__device__ float kgate_pi() { return (float)M_PI + INFINITY; }\n");
  json m = probe_manifest();
  m["nvrtc_options"] = {"-DM_PI=(3.14159265358979323846)",
                        "-DINFINITY=(__int_as_float(0x7f800000))"};
  ok.pkg.write_json("kgate.json", m);
  EXPECT_EQ(ok.compile(), "");
  // A path built by a -D value: the sandbox stops it like any other.
  KGATE_SKIP_WITHOUT_SANDBOX();
  Probe leak("#include KGATE_PATH\n");
  m["nvrtc_options"] = {"-DKGATE_PATH=\"/proc/" + std::to_string(::getpid()) + "/environ\""};
  leak.pkg.write_json("kgate.json", m);
  const std::string err = leak.compile();
  EXPECT_NE(err.find("cannot open source file"), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
}

TEST(CompileSandbox, TheWorkingDirectoryIsNotSearched) {
  KGATE_SKIP_WITHOUT_SANDBOX();
  TempDir cwd;
  cwd.write("kgate_cwd_secret.h", std::string("#error ") + kSecret + "\n");
  const fs::path saved = fs::current_path();
  fs::current_path(cwd.path());
  Probe p("#include \"kgate_cwd_secret.h\"\n");
  const std::string err = p.compile();
  fs::current_path(saved);
  EXPECT_NE(err.find("cannot open source file \"kgate_cwd_secret.h\""), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;
}

TEST(CompileSandbox, HasIncludeCannotProbeOutside) {
  KGATE_SKIP_WITHOUT_SANDBOX();
  TempDir outside;
  outside.write("exists.h", "\n");
  // Each probe of a file that exists would stop the compile with its #error.
  Probe p(
      "#if __has_include(\"/etc/passwd\")\n#error probe: /etc/passwd\n#endif\n"
      "#if __has_include(\"/proc/self/environ\")\n#error probe: environ\n#endif\n"
      "#if __has_include(\"" +
      (outside.path() / "exists.h").string() +
      "\")\n#error probe: a file outside\n#endif\n"
      "#if !__has_include(<cuda_fp16.h>)\n#error the toolkit headers must stay visible\n#endif\n");
  EXPECT_EQ(p.compile(), "");
}

TEST(CompileSandbox, ToolkitHeadersCooperativeGroupsAndCubCompile) {
  // CUDA 13 keeps cuda/std, CUB and Thrust in include/cccl; kgate hands NVRTC that directory too.
  Probe p(
      "#include <cooperative_groups.h>\n#include <cub/warp/warp_reduce.cuh>\n"
      "#include <cuda/std/type_traits>\n"
      "extern \"C\" __global__ void cg(float* x) {\n"
      "  namespace cgr = cooperative_groups;\n"
      "  auto warp = cgr::tiled_partition<32>(cgr::this_thread_block());\n"
      "  x[threadIdx.x] = (float)warp.thread_rank();\n}\n");
  EXPECT_EQ(p.compile(), "");
}

TEST(CompileSandbox, AFifoIncludedByPathDoesNotHang) {
  TempDir dir;
  const fs::path fifo = dir.path() / "kgate.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Probe p("#include \"" + fifo.string() + "\"\n");
  p.options.compile_timeout_seconds = 10;
  const std::string err = p.compile();
  // Hidden by the sandbox ("cannot open"), or stopped at the time limit where there is none.
  EXPECT_TRUE(err.find("cannot open source file") != std::string::npos ||
              err.find("did not finish compiling") != std::string::npos)
      << err;
}

TEST(CompileSandbox, AMacroBombIsStoppedAtTheTimeLimit) {
  std::string bomb = "#define A0 x x x x x x x x x x\n";
  for (int i = 1; i <= 9; ++i) {
    bomb += "#define A" + std::to_string(i);
    for (int j = 0; j < 10; ++j) bomb += " A" + std::to_string(i - 1);
    bomb += "\n";
  }
  bomb += "int kgate_bomb[] = { A9 };\n";
  Probe p(bomb);
  p.options.compile_timeout_seconds = 3;
  const std::string err = p.compile();
  EXPECT_TRUE(err.find("NVRTC did not finish compiling package \"probe\" (probe.cu) within 3 s") !=
                  std::string::npos ||
              err.find("MiB of memory compiling package \"probe\"") != std::string::npos)
      << err;
}

TEST(CompileSandbox, AMacroBombIsStoppedAtTheMemoryLimit) {
  // Each level doubles; the last expands to 2^40 tokens: memory runs out long before time does.
  std::string bomb = "#define B0 \"" + std::string(4000, 'm') + "\",\n";
  for (int i = 1; i <= 40; ++i)
    bomb += "#define B" + std::to_string(i) + " B" + std::to_string(i - 1) + " B" +
            std::to_string(i - 1) + "\n";
  bomb += "const char* kgate_bomb[] = { B40 };\n";
  Probe p(bomb);
  p.options.compile_memory_bytes = 256ULL << 20;
  p.options.compile_timeout_seconds = 120;
  const std::string err = p.compile();
  EXPECT_NE(err.find("NVRTC used more than 256 MiB of memory compiling package \"probe\""),
            std::string::npos)
      << err;
}

TEST(CompileSandbox, RequireSandboxRefusesAnUnconfinedCompile) {
  Probe p("");
  p.options.sandbox = false;  // as on a machine where neither namespaces nor Landlock are allowed
  CompileResult r;
  EXPECT_EQ(p.compile(&r), "");  // without the requirement: compiled, unconfined, said
  EXPECT_EQ(r.sandbox, SandboxKind::none);
  p.options.require_sandbox = true;
  try {
    p.compile();
    FAIL() << "compiled without a sandbox";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("--require-sandbox"), std::string::npos) << e.what();
  }
}

TEST(CompileSandbox, RequireSandboxComesFromTheEnvironment) {
  {
    ScopedEnv on("KGATE_REQUIRE_SANDBOX", "1");
    EXPECT_TRUE(CompileOptions().require_sandbox);
  }
  {
    ScopedEnv off("KGATE_REQUIRE_SANDBOX", "0");
    EXPECT_FALSE(CompileOptions().require_sandbox);
  }
  ScopedEnv timeout("KGATE_COMPILE_TIMEOUT", "12.5");
  EXPECT_DOUBLE_EQ(CompileOptions().compile_timeout_seconds, 12.5);
}

TEST(CompileSandbox, HardLinkedFilesAreRefused) {
  TempDir outside;
  outside.write("secret.cuh", std::string("#error ") + kSecret + "\n");
  Probe p("#include \"secret.cuh\"\n");
  json m = probe_manifest();
  m["include_dirs"] = {"inc"};
  p.pkg.write_json("kgate.json", m);
  fs::create_directories(p.pkg.path() / "inc");
  std::error_code ec;
  fs::create_hard_link(outside.path() / "secret.cuh", p.pkg.path() / "inc" / "secret.cuh", ec);
  if (ec) GTEST_SKIP() << "cannot make a hard link here: " << ec.message();
  const std::string err = p.compile();
  EXPECT_NE(err.find("\"inc/secret.cuh\" has 2 hard links"), std::string::npos) << err;
  EXPECT_EQ(err.find(kSecret), std::string::npos) << err;

  // The same for a source.
  fs::create_hard_link(outside.path() / "secret.cuh", p.pkg.path() / "linked.cu");
  m["sources"] = {"linked.cu"};
  m.erase("include_dirs");
  p.pkg.write_json("kgate.json", m);
  const std::string err2 = p.compile();
  EXPECT_NE(err2.find("\"linked.cu\" has 3 hard links"), std::string::npos) << err2;
}

TEST(CompileSandbox, CompilerLogsAreCapped) {
  const std::string small = "a short log\n";
  EXPECT_EQ(cap_compiler_log(small), small);
  std::string big;
  for (int i = 0; i < 100000; ++i) big += "line " + std::to_string(i) + "\n";
  const std::string capped = cap_compiler_log(big);
  EXPECT_LE(capped.size(), kMaxCompilerLogBytes + 100);
  EXPECT_EQ(capped.rfind("line 0\n", 0), 0u);
  EXPECT_NE(capped.find("line 99999\n"), std::string::npos);
  EXPECT_NE(capped.find("bytes of the compiler log dropped"), std::string::npos);
}

TEST(CompileSandbox, WireFormatRoundTripsAndRejectsGarbage) {
  NvrtcRequest q;
  q.main_name = "a.cu";
  q.main_source = std::string("x\0y\xff", 4);  // bytes, not text: any source survives
  q.header_names = {"h.cuh"};
  q.header_sources = {"#pragma once\n"};
  q.options = {"--gpu-architecture=sm_90"};
  q.name_expressions = {"k<1>"};
  q.readable_dirs = {"/usr/local/cuda/include"};
  q.require_sandbox = true;
  NvrtcRequest back;
  ASSERT_TRUE(decode_request(encode_request(q), back));
  EXPECT_EQ(back.main_source, q.main_source);
  EXPECT_EQ(back.header_sources, q.header_sources);
  EXPECT_TRUE(back.require_sandbox);
  std::string cut = encode_request(q);
  cut.pop_back();
  EXPECT_FALSE(decode_request(cut, back));
  EXPECT_FALSE(decode_request("garbage", back));

  NvrtcResponse r;
  r.status = NvrtcResponse::Status::ok;
  r.cubin = std::string(
      "\x7f"
      "ELF\0\1",
      6);
  r.lowered_names = {{"k<1>", "_Z1kILi1EEvv"}};
  r.sandbox = SandboxKind::landlock;
  r.compile_seconds = 1.5;
  NvrtcResponse rb;
  ASSERT_TRUE(decode_response(encode_response(r), rb));
  EXPECT_EQ(rb.cubin, r.cubin);
  EXPECT_EQ(rb.lowered_names, r.lowered_names);
  EXPECT_EQ(rb.sandbox, SandboxKind::landlock);
  EXPECT_NEAR(rb.compile_seconds, 1.5, 1e-9);
  EXPECT_FALSE(decode_response(encode_request(q), rb));
}

}  // namespace
}  // namespace kgate::package
