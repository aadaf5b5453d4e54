// Tests of kgate.json checking: a valid manifest, then malformed ones written into a temporary
// package, each asserting the exact `<file>: <field>: <message>` line(s) the checker reports.
#include "runtime/package/manifest.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "package_test_util.hpp"
#include "runtime/package/manifest_source.hpp"

namespace kgate::package {
namespace {

using nlohmann::json;
using testing::TempDir;

constexpr const char* kKernel = R"J(
template <class T>
__global__ void k(const T* x, T* y, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)J";

const char* const kTopKeyList =
    "format, name, version, op, op_file, description, attributes, sources, include_dirs, "
    "nvrtc_options, "
    "outputs, symbols, workspace, cubin, fatbin, ptx, build, captured_inputs, "
    "nvrtc_options_for_dtype, "
    "launch_defaults, launches, "
    "guard";

/// A minimal valid manifest for softmax; each test breaks one thing.
json base_manifest() {
  return json::parse(R"J({
    "format": "kgate-package/1",
    "name": "test_pkg",
    "version": "1.0.0",
    "op": "softmax",
    "attributes": {"dim": -1},
    "sources": ["k.cu"],
    "symbols": {"B": ["x", 0], "N": ["x", 1]},
    "launches": [{
      "kernel": "k<float>",
      "grid": ["B"],
      "block": [256],
      "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"}]
    }],
    "guard": {"dtypes": ["f32"], "ranks": [2]}
  })J");
}

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override { pkg.write("k.cu", kKernel); }

  std::string file() const { return (pkg.path() / "kgate.json").string(); }
  std::string line(const std::string& field, const std::string& message) const {
    return file() + ": " + field + ": " + message;
  }

  /// Writes `m` as kgate.json and returns every problem, formatted.
  std::vector<std::string> problems(const json& m, PackageManifest* out = nullptr) {
    pkg.write_json("kgate.json", m);
    return lines(check_manifest(pkg.path(), testing::catalogue_options(), out));
  }
  static std::vector<std::string> lines(const std::vector<ManifestProblem>& ps) {
    std::vector<std::string> out;
    for (const auto& p : ps) {
      EXPECT_EQ(format_problem(p), p.file + ": " + p.field + ": " + p.message);
      out.push_back(format_problem(p));
    }
    return out;
  }
  /// The one problem of `m` (fails the test when there are more or none).
  std::string only_problem(const json& m) {
    const auto ps = problems(m);
    EXPECT_EQ(ps.size(), 1u) << ::testing::PrintToString(ps);
    return ps.empty() ? std::string() : ps.front();
  }

  TempDir pkg;
};

TEST_F(ManifestTest, BaseManifestIsValid) {
  PackageManifest m;
  EXPECT_TRUE(problems(base_manifest(), &m).empty());
  EXPECT_EQ(m.name, "test_pkg");
  EXPECT_EQ(m.op, "softmax");
  EXPECT_EQ(m.dir, pkg.path());
  ASSERT_EQ(m.symbols.size(), 2u);
  EXPECT_EQ(m.symbols[1].name, "N");
  EXPECT_EQ(m.symbols[1].tensor, "x");
  EXPECT_EQ(m.symbols[1].dim, 1);
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].kernel_name(DType::f32), "k<float>");
  EXPECT_EQ(m.launches[0].grid[0].evaluate({{"B", 7}, {"N", 3}}), 7);
  ASSERT_EQ(m.launches[0].args.size(), 3u);
  EXPECT_EQ(m.launches[0].args[2].kind, KernelArg::Kind::shape);
  EXPECT_EQ(m.launches[0].args[2].type, ScalarType::i64);
  EXPECT_EQ(m.guard.layouts, std::vector<Layout>{Layout::contiguous});
  EXPECT_EQ(m.name_expressions(), std::vector<std::string>{"k<float>"});
}

TEST_F(ManifestTest, AScalarMayBeAFloatExpression) {
  json m = base_manifest();
  m["launches"][0]["args"].push_back({{"scalar", "1 / sqrt(N) * dim"}, {"type", "f32"}});
  PackageManifest out;
  EXPECT_TRUE(problems(m, &out).empty()) << ::testing::PrintToString(problems(m));
  ASSERT_TRUE(out.launches[0].args.at(3).float_expr);
  EXPECT_EQ(out.launches[0].args[3].float_expr->text(), "1 / sqrt(N) * dim");
  m["launches"][0]["args"][3] = {{"scalar", "1 / sqrt(D)"}, {"type", "f32"}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[3].scalar",
                 "in \"1 / sqrt(D)\" at column 10: unknown name 'D'; expected a shape symbol or an "
                 "attribute (B, N, dim, dtype_size, device_* (the device's properties))"));
  m["launches"][0]["args"][3] = {{"scalar", "1 / sqrt(N)"}, {"type", "i32"}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[3].type",
                 "a float expression is passed as f32 or f64; an integer value is {\"shape\": "
                 "\"1 / sqrt(N)\", \"type\": \"i32\"}"));
  m["launches"][0]["args"][3] = {{"scalar", "N % 2"}, {"type", "f64"}};
  EXPECT_NE(only_problem(m).find("'%' is not a float operation"), std::string::npos);
}

TEST_F(ManifestTest, OutputsAndWorkspacesTakeAStartValue) {
  json m = base_manifest();
  m["outputs"] = json::parse(R"J({"y": {"start": "-inf"}})J");
  m["workspace"] = json::parse(R"J([
    {"name": "running_max", "dtype": "f32", "shape": ["B"], "start": "-inf"},
    {"name": "count", "dtype": "i32", "shape": ["B"], "start": 7},
    {"name": "sum", "dtype": "f64", "shape": ["B"], "zero": true},
    {"name": "plain", "dtype": "f16", "shape": ["B"]}
  ])J");
  PackageManifest out;
  EXPECT_TRUE(problems(m, &out).empty()) << ::testing::PrintToString(problems(m));
  ASSERT_EQ(out.output_start.size(), 1u);
  EXPECT_EQ(out.output_start.at("y"), -INFINITY);
  ASSERT_EQ(out.workspace.size(), 4u);
  EXPECT_EQ(out.workspace[0].start, std::optional<double>(-INFINITY));
  EXPECT_EQ(out.workspace[1].start, std::optional<double>(7));
  EXPECT_EQ(out.workspace[2].start, std::optional<double>(0));  // "zero": true
  EXPECT_FALSE(out.workspace[3].start);

  // An output the op lacks; a start that is no number; zero and start that disagree; an integer
  // workspace that cannot hold its start.
  m["outputs"] = json::parse(R"J({"z": {"start": 0}})J");
  EXPECT_EQ(only_problem(m),
            line("outputs.z", "op \"softmax\" has no output \"z\"; its outputs: y"));
  m["outputs"] = json::parse(R"J({"y": {"start": "nan"}})J");
  EXPECT_NE(only_problem(m).find("outputs.y.start"), std::string::npos);
  m["outputs"] = json::parse(R"J({"y": {"begin": 0}})J");
  EXPECT_EQ(problems(m).at(0),
            line("outputs.y.begin", "unknown key \"begin\"; expected one of: start"));
  m.erase("outputs");
  m["workspace"] =
      json::parse(R"J([{"name": "w", "dtype": "f32", "shape": ["B"], "zero": true, "start": 1}])J");
  EXPECT_EQ(only_problem(m), line("workspace[0].start",
                                  "\"zero\": true and \"start\": 1 disagree; give one of them"));
  m["workspace"] =
      json::parse(R"J([{"name": "w", "dtype": "i32", "shape": ["B"], "start": "-inf"}])J");
  EXPECT_EQ(only_problem(m),
            line("workspace[0].start",
                 "workspace \"w\" is i32: its start value is a whole number it holds; found -inf"));
  m["workspace"] =
      json::parse(R"J([{"name": "w", "dtype": "i32", "shape": ["B"], "start": 3000000000}])J");
  EXPECT_NE(only_problem(m).find("found 3000000000"), std::string::npos);
}

TEST_F(ManifestTest, AnOutputWrittenInPlaceHasNoStartValue) {
  // softmax with a second output written in place into x.
  static const OpSignature op = [] {
    OpSignature o = testing::softmax_op();
    TensorSpec inplace = o.outputs.at(0);
    inplace.name = "x_out";
    inplace.alias = "x";
    o.outputs.push_back(inplace);
    return o;
  }();
  ManifestCheckOptions options = testing::catalogue_options();
  options.find_op = [](const std::string& name) -> const OpSignature* {
    return name == "softmax" ? &op : nullptr;
  };
  json m = base_manifest();
  m["launches"][0]["args"].push_back({{"tensor", "x_out"}});
  m["outputs"] = json::parse(R"J({"x_out": {"start": 0}})J");
  pkg.write_json("kgate.json", m);
  const auto ps = lines(check_manifest(pkg.path(), options, nullptr));
  ASSERT_EQ(ps.size(), 1u) << ::testing::PrintToString(ps);
  EXPECT_EQ(ps[0], line("outputs.x_out",
                        "output \"x_out\" is written in place into input \"x\": it holds that "
                        "input's values, not a start value; remove it from \"outputs\""));
}

TEST_F(ManifestTest, FullFeaturedManifestIsValid) {
  pkg.write("include/util.cuh", "#pragma once\n");
  json m = base_manifest();
  m["description"] = "two launches with a workspace";
  m["include_dirs"] = {"include"};
  m["nvrtc_options"] = {"-std=c++17",
                        "--use_fast_math",
                        "-DTILE=1024",
                        "-lineinfo",
                        "--fmad=false",
                        "-maxrregcount=64",
                        "--extra-device-vectorization",
                        "-default-device",
                        "--ftz=true",
                        "--prec-div=false",
                        "--prec-sqrt=true",
                        "-DFAST"};
  m["workspace"] = json::parse(R"J([
    {"name": "partial", "dtype": "f32", "shape": ["B", "ceil_div(N, 1024)"], "zero": true}
  ])J");
  m["launches"] = json::parse(R"J([
    {"kernel": {"f32": "k<float>", "bf16": "k<__nv_bfloat16>"},
     "grid": ["B", "ceil_div(N, 1024)", 1], "block": [256, 1, 1], "shared_mem": "256 * 4",
     "args": [{"tensor": "x"}, {"workspace": "partial"}, {"shape": "N", "type": "i64"},
              {"attribute": "dim", "type": "i32"}, {"scalar": 1.5, "type": "f32"},
              {"scalar": 4000000000, "type": "u32"}]},
    {"kernel": "finish", "grid": ["B"], "block": [128],
     "args": [{"workspace": "partial"}, {"tensor": "y"},
              {"shape": "ceil_div(N, 1024) + dim", "type": "i32"}]}
  ])J");
  m["guard"] = json::parse(R"J({
    "dtypes": ["f32", "bf16"], "ranks": [2],
    "shapes": {"N": {"min": 1, "max": 65536, "multiple_of": 4}},
    "layouts": ["contiguous", "offset"],
    "variants": [{"dims": {"B": 4096, "N": 4096}, "dtype": "bf16", "calls": 1200}]
  })J");
  PackageManifest out;
  EXPECT_TRUE(problems(m, &out).empty()) << ::testing::PrintToString(problems(m));
  ASSERT_EQ(out.workspace.size(), 1u);
  EXPECT_TRUE(out.workspace[0].zero);
  EXPECT_EQ(out.workspace[0].shape[1].evaluate({{"B", 2}, {"N", 4097}}), 5);
  ASSERT_EQ(out.launches.size(), 2u);
  EXPECT_EQ(out.launches[0].kernel_name(DType::bf16), "k<__nv_bfloat16>");
  EXPECT_EQ(out.launches[0].kernel_name(DType::f16), "");
  EXPECT_EQ(out.launches[1].kernel_name(DType::bf16), "finish");
  EXPECT_EQ(out.launches[0].shared_mem.evaluate({}), 1024);
  EXPECT_EQ(out.launches[0].args[4].kind, KernelArg::Kind::scalar);
  EXPECT_DOUBLE_EQ(out.launches[0].args[4].float_value, 1.5);
  EXPECT_EQ(out.launches[0].args[5].int_value, 4000000000);
  EXPECT_EQ(out.launches[1].args[2].value.evaluate({{"N", 2048}, {"dim", -1}}), 1);
  EXPECT_EQ(out.guard.shapes.at("N").multiple_of, 4);
  EXPECT_EQ(out.guard.variants.at(0).calls, 1200);
  EXPECT_EQ(out.guard.variants.at(0).dtype, DType::bf16);
  EXPECT_EQ(out.name_expressions(),
            (std::vector<std::string>{"finish", "k<__nv_bfloat16>", "k<float>"}));
  EXPECT_EQ(out.nvrtc_options.size(), 12u);
}

// --- document-level problems -------------------------------------------------------------------

TEST_F(ManifestTest, MissingManifest) {
  EXPECT_EQ(lines(check_manifest(pkg.path())),
            std::vector<std::string>{line("(document)",
                                          "not found; a package directory must "
                                          "contain kgate.json")});
}

TEST_F(ManifestTest, InvalidJsonNamesLineAndColumn) {
  pkg.write("kgate.json", "{\n  \"format\": \"kgate-package/1\",\n  \"name\": \n}\n");
  const auto ps = lines(check_manifest(pkg.path()));
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].rfind(line("(document)", "not valid JSON: parse error at line 4, column 1"), 0),
            0u)
      << ps[0];
}

TEST_F(ManifestTest, NestingDeeperThan128LevelsIsRefusedBeforeParsing) {
  // 500,000 levels deep: a recursive walk of it would overflow the stack (SIGSEGV).
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  pkg.write("kgate.json", "{\"format\": \"kgate-package/1\", \"guard\": " + deep + "}");
  const auto ps = lines(check_manifest(pkg.path()));
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_NE(ps[0].find("not valid JSON: parse error at byte 167: arrays and objects are nested "
                       "more than 128 levels deep"),
            std::string::npos)
      << ps[0];
  // 128 levels are read as JSON (and refused for what they are); brackets inside strings do not
  // count.
  pkg.write("kgate.json", "{\"format\": \"kgate-package/1\", \"description\": \"" +
                              std::string(1000, '[') + "\", \"guard\": " + std::string(127, '[') +
                              std::string(127, ']') + "}");
  for (const auto& p : lines(check_manifest(pkg.path())))
    EXPECT_EQ(p.find("nested more than"), std::string::npos) << p;
}

TEST_F(ManifestTest, DimensionIndicesAboveTwoToThe63AreRefused) {
  // 18446744073709551615 and 18446744073709551614 would read as -1 and -2 (the last dimensions).
  json m = base_manifest();
  m["symbols"]["N"] = json::parse(R"J(["x", 18446744073709551615])J");
  bool named = false;
  for (const auto& p : problems(m))
    named |=
        p.find("symbols.N[1]: dimension 18446744073709551615 is out of range") != std::string::npos;
  EXPECT_TRUE(named) << ::testing::PrintToString(problems(m));
  m = base_manifest();
  m["launches"][0]["args"].push_back(
      json::parse(R"J({"stride": ["x", 18446744073709551614], "type": "i64"})J"));
  named = false;
  for (const auto& p : problems(m))
    named |= p.find("dimension 18446744073709551614 is out of range") != std::string::npos;
  EXPECT_TRUE(named) << ::testing::PrintToString(problems(m));
}

TEST_F(ManifestTest, TopLevelMustBeAnObject) {
  EXPECT_EQ(only_problem(json::array({1, 2})),
            line("(document)", "expected a JSON object at the top level, found an array"));
}

// --- structure (the JSON Schema, runtime/package/kgate-package.schema.json) --------------------

// Each kind of structural mistake is said as file: field: what was found and what is expected.
TEST_F(ManifestTest, StructuralMistakesNameFileAndField) {
  json m = base_manifest();
  m["workspace"] = json::parse(R"J([{"name": "partial", "shape": ["B"]}])J");  // missing key
  EXPECT_EQ(only_problem(m),
            line("workspace[0].dtype", "missing; expected one of f16, bf16, f32, f64, i32, i64"));
  m = base_manifest();
  m["guard"]["unmatched"] = "fallbak";  // not one of the values
  EXPECT_EQ(only_problem(m),
            line("guard.unmatched", "expected one of error, fallback, found \"fallbak\""));
  m = base_manifest();
  m["guard"]["shapes"] =
      json::parse(R"J({"N": {"min": 1, "max": 64, "multiple_of": 0}})J");  // out of range
  EXPECT_EQ(only_problem(m),
            line("guard.shapes.N.multiple_of", "expected an integer >= 1, found 0"));
  m = base_manifest();
  m["launches"][0]["block"] = 256;  // wrong type
  EXPECT_EQ(
      only_problem(m),
      line("launches[0].block",
           "expected an array of 1 to 3 integer expressions such as [\"B\", 1, 1], found 256"));
  m = base_manifest();
  m["guard"]["layout"] = json::array({"contiguous"});  // unknown key
  EXPECT_EQ(only_problem(m),
            line("guard.layout",
                 "unknown key \"layout\"; did you mean \"layouts\"? expected one of: "
                 "dtypes, ranks, shapes, layouts, require, unmatched, variants"));
  m = base_manifest();
  m["launches"][0]["args"][2] =
      json::parse(R"J({"shape": "N", "type": "f32"})J");  // the branch of a choice
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[2].type", "expected one of i32, i64, u32, u64, found \"f32\""));
}

// --- identity ----------------------------------------------------------------------------------

TEST_F(ManifestTest, WrongFormat) {
  json m = base_manifest();
  m["format"] = "kgate-package/2";
  EXPECT_EQ(only_problem(m), line("format",
                                  "expected \"kgate-package/1\" (the format this kgate "
                                  "reads), found \"kgate-package/2\""));
}

TEST_F(ManifestTest, MissingFormat) {
  json m = base_manifest();
  m.erase("format");
  EXPECT_EQ(only_problem(m),
            line("format", "missing; expected \"kgate-package/1\" (the format this kgate reads)"));
}

TEST_F(ManifestTest, EmptyName) {
  json m = base_manifest();
  m["name"] = "";
  EXPECT_EQ(only_problem(m),
            line("name",
                 "expected a package name of letters, digits and _ . - (at most 64, such "
                 "as \"softmax_rows\"), found \"\""));
}

TEST_F(ManifestTest, MissingVersion) {
  json m = base_manifest();
  m.erase("version");
  EXPECT_EQ(only_problem(m), line("version",
                                  "missing; expected a semantic version MAJOR.MINOR.PATCH such as "
                                  "\"1.2.0\""));
}

TEST_F(ManifestTest, VersionNotSemver) {
  json m = base_manifest();
  m["version"] = "1.0";
  EXPECT_EQ(only_problem(m), line("version",
                                  "expected a semantic version MAJOR.MINOR.PATCH such "
                                  "as \"1.2.0\", found \"1.0\""));
  m["version"] = 1;
  EXPECT_EQ(only_problem(m), line("version",
                                  "expected a semantic version MAJOR.MINOR.PATCH such "
                                  "as \"1.2.0\", found 1"));
  m["version"] = "2.1.0-rc.1+build.5";
  EXPECT_TRUE(problems(m).empty());
}

TEST_F(ManifestTest, UnknownOpSuggestsClosest) {
  json m = base_manifest();
  m["op"] = "softmx";
  EXPECT_EQ(only_problem(m), line("op",
                                  "unknown op \"softmx\"; did you mean \"softmax\"? known "
                                  "ops: layer_norm, softmax"));
}

TEST_F(ManifestTest, OpMustBeAnIdentifier) {
  json m = base_manifest();
  m["op"] = "soft max";
  EXPECT_EQ(only_problem(m), line("op",
                                  "expected the name of the op the package implements, such "
                                  "as \"softmax\" (an identifier), found \"soft max\""));
}

TEST_F(ManifestTest, CapturedInputsMustBeAnArrayOfFilesInsideThePackage) {
  json m = base_manifest();
  m["captured_inputs"] = json::object({{"a", 1}});
  EXPECT_EQ(only_problem(m), line("captured_inputs",
                                  "expected an array of safetensors files relative to the package "
                                  "(at most 256), found an object"));
  m["captured_inputs"] = json::array({"../x.safetensors"});
  EXPECT_EQ(
      only_problem(m),
      line("captured_inputs[0]",
           "\"../x.safetensors\" contains \"..\"; expected a path inside the package directory"));
}

TEST_F(ManifestTest, UnknownTopLevelKeySuggestsClosest) {
  json m = base_manifest();
  m["include_dir"] = json::array({"include"});
  EXPECT_EQ(only_problem(m),
            line("include_dir", std::string("unknown key \"include_dir\"; did you mean "
                                            "\"include_dirs\"? expected one of: ") +
                                    kTopKeyList));
  m.erase("include_dir");
  m["zzz"] = 1;
  EXPECT_EQ(only_problem(m),
            line("zzz", std::string("unknown key \"zzz\"; expected one of: ") + kTopKeyList));
}

TEST_F(ManifestTest, UnknownKeyWithAKnownSynonym) {
  json m = base_manifest();
  m["kernels"] = m["launches"];
  EXPECT_EQ(only_problem(m),
            line("kernels", std::string("unknown key \"kernels\"; did you mean \"launches\"? "
                                        "expected one of: ") +
                                kTopKeyList));
}

TEST_F(ManifestTest, KernelTypoInLaunch) {
  json m = base_manifest();
  m["launches"][0]["kernal"] = "k<float>";
  m["launches"][0].erase("kernel");
  EXPECT_EQ(problems(m),
            (std::vector<std::string>{
                line("launches[0].kernal",
                     "unknown key \"kernal\"; did you mean \"kernel\"? "
                     "expected one of: for_each, kernel, grid, block, "
                     "nvrtc_options, shared_mem, max_dynamic_shared_mem, carveout, cluster, "
                     "cooperative, pdl, cubin, assumes, args, when"),
                line("launches[0].kernel",
                     "missing; expected a kernel name expression such as "
                     "\"softmax_rows<float>\", or an object of them per dtype such as "
                     "{\"f32\": \"k<float>\"}")}));
}

// --- paths -------------------------------------------------------------------------------------

TEST_F(ManifestTest, ParentDirectoryInSource) {
  json m = base_manifest();
  m["sources"] = {"../k.cu"};
  EXPECT_EQ(only_problem(m), line("sources[0]",
                                  "\"../k.cu\" contains \"..\"; expected a path "
                                  "inside the package directory"));
  m["sources"] = {"sub/../k.cu"};
  EXPECT_EQ(only_problem(m), line("sources[0]",
                                  "\"sub/../k.cu\" contains \"..\"; expected a path "
                                  "inside the package directory"));
  // Two dots inside a name are not a parent directory.
  pkg.write("k..v2.cu", "// a source\n");
  m["sources"] = {"k..v2.cu"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
}

// "op_file": the op file a package carries for an op not built in, loaded before the op is looked
// up; a path inside the package like its sources, and its problems are the manifest's.
TEST_F(ManifestTest, OpFileIsLoadedFromInsideThePackage) {
  json m = base_manifest();
  pkg.write("op.json", "{}");
  std::vector<std::string> loaded;
  ManifestCheckOptions options = testing::catalogue_options();
  options.load_op_file = [&](const std::string& path) {
    loaded.push_back(path);
    if (path.find("bad") != std::string::npos)
      throw Error(ErrorKind::usage, "op file " + path + " is invalid");
  };
  m["op_file"] = "op.json";
  pkg.write_json("kgate.json", m);
  PackageManifest out;
  EXPECT_TRUE(check_manifest(pkg.path(), options, &out).empty());
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(std::filesystem::path(loaded[0]).filename(), "op.json");
  EXPECT_EQ(out.op_file, loaded[0]);

  m["op_file"] = "../op.json";
  EXPECT_EQ(only_problem(m),
            line("op_file",
                 "\"../op.json\" contains \"..\"; expected a path inside the package directory"));
  m["op_file"] = 3;
  EXPECT_EQ(
      only_problem(m),
      line("op_file", "expected the path of the op file (kgate-op/1) inside the package, found 3"));
  pkg.write("bad.json", "{}");
  m["op_file"] = "bad.json";
  pkg.write_json("kgate.json", m);
  const auto ps = lines(check_manifest(pkg.path(), options));
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_NE(ps[0].find("op_file: op file "), std::string::npos) << ps[0];
}

TEST_F(ManifestTest, AbsoluteSourcePath) {
  json m = base_manifest();
  m["sources"] = {"/etc/hosts"};
  EXPECT_EQ(only_problem(m), line("sources[0]",
                                  "\"/etc/hosts\" is an absolute path; expected a "
                                  "path relative to the package directory"));
}

TEST_F(ManifestTest, SymlinkEscapingThePackage) {
  TempDir outside;
  outside.write("evil.cu", kKernel);
  std::filesystem::create_symlink(outside.path() / "evil.cu", pkg.path() / "link.cu");
  std::filesystem::create_directory_symlink(outside.path(), pkg.path() / "sub");
  json m = base_manifest();
  m["sources"] = {"link.cu", "sub/evil.cu"};
  const std::string target = (outside.path() / "evil.cu").string();
  EXPECT_EQ(problems(m),
            (std::vector<std::string>{
                line("sources[0]", "\"link.cu\" resolves to \"" + target +
                                       "\", outside the package directory (through a symbolic "
                                       "link); expected a path inside it"),
                line("sources[1]", "\"sub/evil.cu\" resolves to \"" + target +
                                       "\", outside the package directory (through a symbolic "
                                       "link); expected a path inside it")}));
}

TEST_F(ManifestTest, SymlinkInsideThePackageIsFine) {
  std::filesystem::create_symlink("k.cu", pkg.path() / "alias.cu");
  json m = base_manifest();
  m["sources"] = {"alias.cu"};
  EXPECT_TRUE(problems(m).empty());
}

TEST_F(ManifestTest, MissingSource) {
  json m = base_manifest();
  m["sources"] = {"nope.cu"};
  EXPECT_EQ(only_problem(m),
            line("sources[0]", "\"nope.cu\" does not exist in the package directory"));
}

TEST_F(ManifestTest, SourceIsADirectory) {
  pkg.write("src/a.cu", kKernel);
  json m = base_manifest();
  m["sources"] = {"src"};
  EXPECT_EQ(only_problem(m), line("sources[0]",
                                  "\"src\" is not a regular file; expected a CUDA "
                                  "source file"));
}

TEST_F(ManifestTest, OversizedSource) {
  pkg.write("big.cu", std::string(kMaxSourceBytes + 1, ' '));
  pkg.write("fits.cu", std::string(kMaxSourceBytes, ' '));
  json m = base_manifest();
  m["sources"] = {"big.cu", "fits.cu"};
  EXPECT_EQ(only_problem(m), line("sources[0]",
                                  "\"big.cu\" has 1048577 bytes; expected at most "
                                  "1048576 (1 MiB)"));
}

TEST_F(ManifestTest, SourcesMustBeANonEmptyArray) {
  json m = base_manifest();
  m["sources"] = json::array();
  EXPECT_EQ(only_problem(m), line("sources",
                                  "expected a non-empty array of source files relative "
                                  "to the package, such as [\"kernel.cu\"], found an array"));
  m["sources"] = {"k.cu", "k.cu"};
  EXPECT_EQ(only_problem(m), line("sources[1]", "\"k.cu\" is listed twice"));
}

TEST_F(ManifestTest, IncludeDirHeaderEscapingThePackage) {
  TempDir outside;
  outside.write("secret.h", "#define SECRET 1\n");
  pkg.write("include/ok.cuh", "#pragma once\n");
  std::filesystem::create_symlink(outside.path() / "secret.h", pkg.path() / "include" / "link.h");
  json m = base_manifest();
  m["include_dirs"] = {"include"};
  EXPECT_EQ(only_problem(m),
            line("include_dirs[0]", "\"include/link.h\" resolves to \"" +
                                        (outside.path() / "secret.h").string() +
                                        "\", outside the package directory (through a symbolic "
                                        "link); expected a path inside it"));
}

TEST_F(ManifestTest, IncludeDirMustBeADirectory) {
  json m = base_manifest();
  m["include_dirs"] = {"k.cu", "/usr/include", "missing"};
  EXPECT_EQ(problems(m),
            (std::vector<std::string>{
                line("include_dirs[0]",
                     "\"k.cu\" is not a directory; expected a directory of "
                     "headers"),
                line("include_dirs[1]",
                     "\"/usr/include\" is an absolute path; expected a path "
                     "relative to the package directory"),
                line("include_dirs[2]", "\"missing\" does not exist in the package directory")}));
}

// A problem names the entry as the manifest lists it, also when an entry before it was refused.
TEST_F(ManifestTest, AProblemNamesItsEntryAfterARefusedOne) {
  TempDir outside;
  outside.write("secret.h", "#define SECRET 1\n");
  pkg.write("include/ok.cuh", "#pragma once\n");
  std::filesystem::create_symlink(outside.path() / "secret.h", pkg.path() / "include" / "link.h");
  json m = base_manifest();
  m["include_dirs"] = {"missing", "include"};
  const auto found = problems(m);
  ASSERT_EQ(found.size(), 2u) << ::testing::PrintToString(found);
  EXPECT_EQ(found[0],
            line("include_dirs[0]", "\"missing\" does not exist in the package directory"));
  EXPECT_NE(found[1].find("include_dirs[1]: \"include/link.h\" resolves to"), std::string::npos)
      << found[1];
  m = base_manifest();
  m["workspace"] = json::parse(R"J([{"name": "a", "dtype": "f8", "shape": [1]},
                                    {"name": "w", "dtype": "f32", "shape": ["N * N * N"]}])J");
  m["launches"][0]["args"].push_back({{"workspace", "w"}});
  std::string all;
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("workspace[0].dtype: unknown dtype \"f8\""), std::string::npos) << all;
  EXPECT_NE(all.find("workspace[1].shape: the workspace would take more than 2^48 bytes (256 TiB) "
                     "at the largest call"),
            std::string::npos)
      << all;
}

// --- NVRTC options -----------------------------------------------------------------------------

TEST_F(ManifestTest, ArchitectureOptionRefused) {
  json m = base_manifest();
  m["nvrtc_options"] = {"-std=c++17", "-arch=sm_80"};
  EXPECT_EQ(only_problem(m), line("nvrtc_options[1]",
                                  "\"-arch=sm_80\" is not allowed: kgate sets the GPU "
                                  "architecture for the device (or `kgate validate --arch`); "
                                  "remove it"));
}

TEST_F(ManifestTest, IncludePathOptionRefused) {
  json m = base_manifest();
  m["nvrtc_options"] = {"-I/usr/include"};
  EXPECT_EQ(only_problem(m), line("nvrtc_options[0]",
                                  "\"-I/usr/include\" is not allowed: list "
                                  "include directories in \"include_dirs\" "
                                  "instead"));
}

TEST_F(ManifestTest, UnknownOptionRefused) {
  json m = base_manifest();
  m["nvrtc_options"] = {"-G"};
  EXPECT_EQ(only_problem(m),
            line("nvrtc_options[0]",
                 "\"-G\" is not an allowed NVRTC option; expected one of -std=c++11|14|17|20, "
                 "--use_fast_math, -DNAME[=VALUE], -lineinfo, --fmad=true|false, "
                 "--ftz=true|false, --prec-div=true|false, --prec-sqrt=true|false, "
                 "-maxrregcount=N, --extra-device-vectorization, -default-device, -dopt=on, "
                 "--Ofast-compile=0|min|mid|max"));
}

TEST_F(ManifestTest, NvrtcOptimisationSwitchesAreAllowed) {
  json m = base_manifest();
  m["nvrtc_options"] = {"-dopt=on", "--dopt=on", "--Ofast-compile=max", "--Ofast-compile=0"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  // What NVRTC 13 refuses (NVRTC_ERROR_INVALID_OPTION) is refused here, by name.
  for (const char* o : {"--Ofast-compile=fastest", "-dopt", "--dopt=off", "-Ofast-compile=0"}) {
    m["nvrtc_options"] = {o};
    EXPECT_NE(only_problem(m).find("is not an allowed NVRTC option"), std::string::npos) << o;
  }
}

TEST_F(ManifestTest, MacroValuesAreAnyPrintableText) {
  // NVRTC has no M_PI or INFINITY: packages define them. Each option is one argument to NVRTC,
  // never a shell, so $(id) is just text.
  json m = base_manifest();
  m["nvrtc_options"] = {"-DM_PI=(3.14159265358979323846)",
                        "-DINFINITY=(__int_as_float(0x7f800000))", "-DX=$(id)", "-DPAIR=(a, b)"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  m["nvrtc_options"] = {"-DX=a\nb"};
  EXPECT_EQ(only_problem(m), line("nvrtc_options[0]",
                                  "\"-DX=a\\nb\" is not an allowed macro definition; expected "
                                  "-DNAME or -DNAME=VALUE (NAME an identifier, VALUE printable "
                                  "ASCII text of at most 192 characters)"));
  m["nvrtc_options"] = {"-D1X=2"};
  EXPECT_NE(only_problem(m).find("is not an allowed macro definition"), std::string::npos);
}

TEST_F(ManifestTest, RegisterCountOutOfRange) {
  json m = base_manifest();
  m["nvrtc_options"] = {"-maxrregcount=4"};
  EXPECT_EQ(only_problem(m), line("nvrtc_options[0]",
                                  "\"-maxrregcount=4\" is out of range; "
                                  "expected -maxrregcount=N with 16 <= N <= "
                                  "255"));
}

// --- expressions and symbols -------------------------------------------------------------------

TEST_F(ManifestTest, BadGridExpressionNamesTheColumn) {
  json m = base_manifest();
  m["launches"][0]["grid"] = {"ceil_div(N, 256"};
  EXPECT_EQ(only_problem(m), line("launches[0].grid[0]",
                                  "in \"ceil_div(N, 256\" at column 16: expected ',' or ')' in "
                                  "the call of ceil_div, found end of expression"));
}

TEST_F(ManifestTest, UnknownSymbolInBlock) {
  json m = base_manifest();
  m["launches"][0]["block"] = {"M * 2"};
  EXPECT_EQ(
      only_problem(m),
      line("launches[0].block[0]",
           "in \"M * 2\" at column 1: unknown "
           "symbol 'M'; known symbols: B, N, dim, dtype_size, device_* (the device's properties)"));
}

TEST_F(ManifestTest, GridNeedsOneToThreeExpressions) {
  json m = base_manifest();
  m["launches"][0]["grid"] = {1, 1, 1, 1};
  EXPECT_EQ(only_problem(m), line("launches[0].grid",
                                  "expected an array of 1 to 3 integer "
                                  "expressions such as [\"B\", 1, 1], found "
                                  "an array"));
  m["launches"][0]["grid"] = {true};
  EXPECT_EQ(only_problem(m), line("launches[0].grid[0]",
                                  "expected an integer expression such as "
                                  "\"ceil_div(N, 256)\", found true"));
}

TEST_F(ManifestTest, BlockTooLarge) {
  json m = base_manifest();
  m["launches"][0]["block"] = {64, 32};
  EXPECT_EQ(only_problem(m),
            line("launches[0].block", "a block has 1 to 1024 threads; found 2048"));
  // One axis over its limit is one problem, not also a second one for the product.
  m["launches"][0]["block"] = {2048};
  EXPECT_EQ(only_problem(m),
            line("launches[0].block[0]", "a block's x size is 1 to 1024; found 2048"));
}

TEST_F(ManifestTest, SymbolDimensionOutsideTheRank) {
  json m = base_manifest();
  m["symbols"]["N"] = {"x", 2};
  EXPECT_EQ(only_problem(m), line("symbols.N[1]",
                                  "dimension 2 does not exist in a rank-2 tensor "
                                  "(guard.ranks); expected -2 to 1"));
  m["symbols"]["N"] = {"x", -1};
  EXPECT_TRUE(problems(m).empty());
}

TEST_F(ManifestTest, SymbolBindingSyntax) {
  json m = base_manifest();
  m["symbols"]["N"] = "x.size(1)";
  EXPECT_EQ(only_problem(m), line("symbols.N",
                                  "expected [TENSOR, DIM] such as [\"x\", 0], found "
                                  "\"x.size(1)\""));
}

// --- arguments ---------------------------------------------------------------------------------

TEST_F(ManifestTest, UnknownTensorSuggestsClosest) {
  json m = base_manifest();
  m["launches"][0]["args"][0] = {{"tensor", "xx"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[0].tensor",
                                  "op \"softmax\" has no tensor "
                                  "\"xx\"; did you mean \"x\"? "
                                  "expected one of: x, y"));
}

TEST_F(ManifestTest, OutputNeverPassed) {
  json m = base_manifest();
  m["launches"][0]["args"].erase(1);
  EXPECT_EQ(only_problem(m), line("launches",
                                  "output \"y\" of op \"softmax\" is never passed to a "
                                  "kernel; expected {\"tensor\": \"y\"} in some "
                                  "launch's args"));
}

TEST_F(ManifestTest, BadScalarType) {
  json m = base_manifest();
  m["launches"][0]["args"][2]["type"] = "i16";
  EXPECT_EQ(only_problem(m), line("launches[0].args[2].type",
                                  "expected one of i32, i64, u32, u64, "
                                  "found \"i16\""));
  m["launches"][0]["args"][2].erase("type");
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[2].type", "missing; expected one of i32, i64, u32, u64"));
}

TEST_F(ManifestTest, ArgumentWithTwoKinds) {
  json m = base_manifest();
  m["launches"][0]["args"][0] = {{"tensor", "x"}, {"shape", "N"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[0]",
                                  "expected exactly one of tensor, "
                                  "workspace, shape, attribute, scalar, stride, "
                                  "found tensor and shape"));
}

TEST_F(ManifestTest, UndeclaredWorkspace) {
  json m = base_manifest();
  m["launches"][0]["args"].push_back({{"workspace", "partial"}});
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].workspace",
                                  "expected the name of a tensor declared in \"workspace\" (none "
                                  "declared), found \"partial\""));
}

TEST_F(ManifestTest, WorkspaceNamedLikeATensor) {
  json m = base_manifest();
  m["workspace"] = json::parse(R"J([{"name": "y", "dtype": "f32", "shape": ["B"]}])J");
  EXPECT_EQ(only_problem(m), line("workspace[0].name",
                                  "\"y\" is a tensor of op \"softmax\"; a "
                                  "workspace needs its own name"));
}

TEST_F(ManifestTest, NonIntegerAttributeAsIntegerArgument) {
  json m = base_manifest();
  m["attributes"]["dim"] = -1.5;
  m["launches"][0]["args"].push_back({{"attribute", "dim"}, {"type", "i32"}});
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].type",
                                  "attribute \"dim\" is not an "
                                  "integer; expected f32 or f64"));
}

TEST_F(ManifestTest, UnknownAttribute) {
  json m = base_manifest();
  m["attributes"]["eps"] = 1e-5;
  EXPECT_EQ(only_problem(m), line("attributes.eps",
                                  "op \"softmax\" has no attribute \"eps\"; "
                                  "expected one of: dim"));
}

TEST_F(ManifestTest, ScalarOutOfRangeForItsType) {
  json m = base_manifest();
  m["launches"][0]["args"].push_back({{"scalar", 3000000000LL}, {"type", "i32"}});
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].scalar",
                                  "expected an integer from -2147483648 to 2147483647 for type "
                                  "i32, found 3000000000"));
  m["launches"][0]["args"][3] = {{"scalar", 0.5}, {"type", "u64"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].scalar",
                                  "expected an integer from 0 to 9223372036854775807 for type "
                                  "u64, found 0.5"));
}

TEST_F(ManifestTest, KernelNameWithStatementRefused) {
  json m = base_manifest();
  m["launches"][0]["kernel"] = "k<float>; int x";
  EXPECT_EQ(only_problem(m), line("launches[0].kernel",
                                  "expected a C++ kernel name (templates allowed: letters, "
                                  "digits, spaces and _ : < > , . * & ( ) -), found "
                                  "\"k<float>; int x\""));
}

TEST_F(ManifestTest, PerDtypeKernelsMustCoverTheGuard) {
  json m = base_manifest();
  m["guard"]["dtypes"] = {"f32", "bf16"};
  m["launches"][0]["kernel"] = {{"f32", "k<float>"}};
  EXPECT_EQ(only_problem(m), line("launches[0].kernel",
                                  "no kernel for dtype \"bf16\" of "
                                  "guard.dtypes; expected a name expression "
                                  "for every guard dtype"));
  m["launches"][0]["kernel"] = {
      {"f32", "k<float>"}, {"bf16", "k<__nv_bfloat16>"}, {"f16", "k<__half>"}};
  EXPECT_EQ(only_problem(m), line("launches[0].kernel.f16",
                                  "dtype \"f16\" is not in "
                                  "guard.dtypes"));
}

// --- guard -------------------------------------------------------------------------------------

TEST_F(ManifestTest, UnknownGuardDtype) {
  json m = base_manifest();
  m["guard"]["dtypes"] = {"f8"};
  EXPECT_EQ(only_problem(m), line("guard.dtypes[0]",
                                  "unknown dtype \"f8\"; expected one of f16, "
                                  "bf16, f32, f64"));
  m["guard"]["dtypes"] = {"i32"};
  EXPECT_EQ(only_problem(m), line("guard.dtypes[0]",
                                  "dtype \"i32\" is not supported here; "
                                  "expected one of f16, bf16, f32, f64"));
}

TEST_F(ManifestTest, MissingGuard) {
  json m = base_manifest();
  m.erase("guard");
  EXPECT_EQ(only_problem(m), line("guard",
                                  "missing; expected an object with at least \"dtypes\", "
                                  "such as {\"dtypes\": [\"f32\"]}"));
}

TEST_F(ManifestTest, ShapeRangeMinAboveMax) {
  json m = base_manifest();
  m["guard"]["shapes"] = {{"N", {{"min", 10}, {"max", 5}}}};
  EXPECT_EQ(only_problem(m), line("guard.shapes.N",
                                  "min 10 is greater than max 5; expected min "
                                  "<= max"));
}

// A bound of guard.shapes may be given alone: the other is the op's (the symbol's domain).
TEST_F(ManifestTest, AShapeBoundMayBeGivenAlone) {
  json m = base_manifest();
  m["guard"]["shapes"] = {{"N", {{"max", 4096}}}, {"B", {{"multiple_of", 4}}}};
  PackageManifest out;
  const auto ps = problems(m, &out);
  ASSERT_TRUE(ps.empty()) << ::testing::PrintToString(ps);
  EXPECT_EQ(out.guard.shapes.at("N").max, 4096);
  EXPECT_EQ(out.guard.shapes.at("N").min, 1);  // softmax's N starts at 1
  EXPECT_EQ(out.guard.shapes.at("B").multiple_of, 4);
  EXPECT_GE(out.guard.shapes.at("B").max, 4096);  // the op's B
  m["guard"]["shapes"] = {{"N", {{"min", 64}}}};
  ASSERT_TRUE(problems(m, &out).empty());
  EXPECT_EQ(out.guard.shapes.at("N").min, 64);
  EXPECT_GT(out.guard.shapes.at("N").max, 64);
}

// Up to 64 launches may be listed; past that the limit is named, and no second, misleading problem
// (an output "never passed to a kernel") follows from launches that were not read.
TEST_F(ManifestTest, LaunchesAreCappedAtSixtyFourWithTheLimitNamed) {
  json m = base_manifest();
  const json one = m["launches"][0];
  m["launches"] = json::array();
  for (int i = 0; i < 40; ++i) {
    json l = one;
    l["when"] = {{"if", "N == " + std::to_string(i + 1)}};
    m["launches"].push_back(l);
  }
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  for (int i = 40; i < 65; ++i) m["launches"].push_back(one);
  const auto p = only_problem(m);
  EXPECT_NE(p.find("launches"), std::string::npos) << p;
  EXPECT_NE(p.find("64"), std::string::npos) << p;
  EXPECT_EQ(p.find("never passed"), std::string::npos) << p;
}

TEST_F(ManifestTest, ShapeRangeOfUnknownSymbol) {
  json m = base_manifest();
  m["guard"]["shapes"] = {{"K", {{"min", 1}, {"max", 5}}}};
  EXPECT_EQ(only_problem(m), line("guard.shapes.K",
                                  "unknown symbol \"K\"; expected one of "
                                  "\"symbols\": B, N"));
}

TEST_F(ManifestTest, UnknownLayout) {
  json m = base_manifest();
  m["guard"]["layouts"] = {"contiguous", "rowmajor"};
  EXPECT_EQ(only_problem(m), line("guard.layouts[1]",
                                  "expected one of contiguous, strided, "
                                  "offset, found \"rowmajor\""));
}

TEST_F(ManifestTest, VariantWithoutCalls) {
  json m = base_manifest();
  m["guard"]["variants"] =
      json::parse(R"J([{"dims": {"B": 1, "N": 2}, "dtype": "f32", "calls": 0}])J");
  EXPECT_EQ(only_problem(m), line("guard.variants[0].calls",
                                  "expected an integer from 1 to 1099511627776, found 0"));
}

TEST_F(ManifestTest, HugeCallCountsAreRefused) {
  // 2^63-1 calls made the workload's call total negative.
  json m = base_manifest();
  m["guard"]["variants"] = json::parse(
      R"J([{"dims": {"B": 1, "N": 2}, "dtype": "f32", "calls": 9223372036854775807},
           {"dims": {"B": 1, "N": 4}, "dtype": "f32", "calls": 18446744073709551615}])J");
  std::string all;
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("guard.variants[0].calls: expected an integer from 1 to "
                     "1099511627776, found 9223372036854775807"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("guard.variants[1].calls: expected an integer from 1 to "
                     "1099511627776, found 18446744073709551615"),
            std::string::npos)
      << all;
}

TEST_F(ManifestTest, VariantOutsideTheGuard) {
  json m = base_manifest();
  m["guard"]["shapes"] = {{"N", {{"min", 1}, {"max", 1024}}}};
  m["guard"]["variants"] =
      json::parse(R"J([{"dims": {"B": 1, "N": 4096}, "dtype": "bf16", "calls": 3}])J");
  EXPECT_EQ(problems(m),
            (std::vector<std::string>{
                line("guard.variants[0].dims.N", "4096 is outside guard.shapes.N [1, 1024]"),
                line("guard.variants[0].dtype", "dtype \"bf16\" is not in guard.dtypes")}));
}

TEST_F(ManifestTest, VariantMustGiveEverySymbol) {
  json m = base_manifest();
  m["guard"]["variants"] = json::parse(R"J([{"dims": {"N": 4096}, "dtype": "f32", "calls": 7}])J");
  EXPECT_EQ(only_problem(m), line("guard.variants[0].dims",
                                  "no value for B; expected a value for "
                                  "every symbol: B, N"));
}

TEST_F(ManifestTest, VariantNotAMultipleOfTheGuard) {
  json m = base_manifest();
  m["guard"]["shapes"] = {{"N", {{"min", 1}, {"max", 8192}, {"multiple_of", 8}}}};
  m["guard"]["variants"] =
      json::parse(R"J([{"dims": {"B": 2, "N": 4100}, "dtype": "f32", "calls": 7}])J");
  EXPECT_EQ(only_problem(m), line("guard.variants[0].dims.N",
                                  "4100 is not a multiple of 8 "
                                  "(guard.shapes.N.multiple_of)"));
}

// --- launch conditions, strides, built-in symbols, attributes of the op ------------------------

/// Two launches of one kernel that take turns by the row length and the layout, with strides.
json dispatch_manifest() {
  json m = base_manifest();
  m["guard"]["layouts"] = {"contiguous", "strided", "offset"};
  m["launches"] = json::parse(R"J([
    {"kernel": "k<float>", "when": {"if": "N <= 1024", "layouts": ["contiguous", "offset"]},
     "grid": ["ceil_div(B * N / (16 / dtype_size), 256)"], "block": [256],
     "args": [{"tensor": "x"}, {"tensor": "y"}, {"stride": ["x", 0], "type": "i64"},
              {"stride": ["y", -1], "type": "u32"}]},
    {"kernel": "k<float>", "when": {"if": "N > 1024 || B % 2 != 0"},
     "grid": ["B"], "block": [256],
     "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"}]}
  ])J");
  return m;
}

TEST_F(ManifestTest, LaunchConditionsAndStrides) {
  PackageManifest out;
  EXPECT_TRUE(problems(dispatch_manifest(), &out).empty())
      << ::testing::PrintToString(problems(dispatch_manifest()));
  ASSERT_EQ(out.launches.size(), 2u);
  const LaunchCondition& w0 = out.launches[0].when;
  ASSERT_TRUE(w0.if_expr.has_value());
  EXPECT_EQ(w0.if_expr->text(), "N <= 1024");
  EXPECT_EQ(w0.layouts, (std::vector<Layout>{Layout::contiguous, Layout::offset}));
  EXPECT_TRUE(out.launches[1].when.layouts.empty());
  EXPECT_EQ(out.launches[1].when.if_expr->evaluate({{"B", 3}, {"N", 8}}), 1);
  EXPECT_EQ(out.launches[0].grid[0].evaluate({{"B", 2}, {"N", 1000}, {"dtype_size", 2}}), 1);
  const KernelArg& s0 = out.launches[0].args[2];
  EXPECT_EQ(s0.kind, KernelArg::Kind::stride);
  EXPECT_EQ(s0.name, "x");
  EXPECT_EQ(s0.dim, 0);
  EXPECT_EQ(s0.type, ScalarType::i64);
  EXPECT_EQ(out.launches[0].args[3].dim, -1);
  EXPECT_EQ(out.launches[0].args[3].type, ScalarType::u32);
  // A launch without "when" has no condition.
  EXPECT_TRUE(problems(base_manifest(), &out).empty());
  EXPECT_FALSE(out.launches[0].when.if_expr.has_value());
  EXPECT_TRUE(out.launches[0].when.layouts.empty());
}

TEST_F(ManifestTest, BadLaunchConditions) {
  json m = dispatch_manifest();
  m["launches"][1]["when"] = json::object();
  EXPECT_EQ(only_problem(m), line("launches[1].when",
                                  "expected an object with \"if\" (an integer expression: the "
                                  "launch runs when it is non-zero) and/or \"layouts\" (the call "
                                  "layouts it runs for), such as {\"if\": \"N > 1024\"}, found "
                                  "an object"));
  m["launches"][1]["when"] = "N > 1024";
  EXPECT_EQ(only_problem(m), line("launches[1].when",
                                  "expected an object with \"if\" (an integer expression: the "
                                  "launch runs when it is non-zero) and/or \"layouts\" (the call "
                                  "layouts it runs for), such as {\"if\": \"N > 1024\"}, found "
                                  "\"N > 1024\""));
  m["launches"][1]["when"] = {{"iff", "N > 1024"}};
  EXPECT_EQ(only_problem(m), line("launches[1].when.iff",
                                  "unknown key \"iff\"; did you mean \"if\"? expected one of: "
                                  "if, layouts"));
  m["launches"][1]["when"] = {{"if", "N => 1024"}};
  EXPECT_EQ(only_problem(m), line("launches[1].when.if",
                                  "in \"N => 1024\" at column 3: '=' is not an operator; expected "
                                  "== to compare"));
  m["launches"][1]["when"] = {{"if", "M > 1024"}};
  EXPECT_EQ(
      only_problem(m),
      line("launches[1].when.if",
           "in \"M > 1024\" at column 1: unknown symbol 'M'; known "
           "symbols: B, N, align_x, align_y, dim, dtype_size, numel_x, numel_y, "
           "stride_x_0, stride_x_1, stride_y_0, stride_y_1, device_* (the device's properties)"));
  m["launches"][1]["when"] = {{"layouts", {"rowmajor"}}};
  EXPECT_EQ(only_problem(m), line("launches[1].when.layouts[0]",
                                  "expected one of contiguous, strided, offset, found "
                                  "\"rowmajor\""));
  m["launches"][1]["when"] = {{"layouts", json::array()}};
  EXPECT_EQ(only_problem(m), line("launches[1].when.layouts",
                                  "expected a non-empty array of contiguous, strided, offset, "
                                  "found an array"));
}

TEST_F(ManifestTest, LaunchLayoutOutsideTheGuard) {
  json m = dispatch_manifest();
  m["guard"]["layouts"] = {"contiguous"};
  EXPECT_EQ(only_problem(m),
            line("launches[0].when.layouts[1]",
                 "layout offset is not in guard.layouts [contiguous]: calls of that layout fall "
                 "back to the reference, so the launch never runs for them; add it to "
                 "guard.layouts or remove it here"));
}

// --- launch_defaults and for_each
// ------------------------------------------------------------------

TEST_F(ManifestTest, ForEachExpandsOneLaunchPerBindingWithDefaults) {
  json m = base_manifest();
  m["launch_defaults"] = json::parse(R"J({"grid": ["B"], "block": [256],
      "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"}]})J");
  m["launches"] = json::parse(R"J([
    {"for_each": {"VPT": [1, 2, 4]}, "kernel": "k<float>", "when": {"if": "N > 32 * {VPT} / 2 && N <= 32 * {VPT}"},
     "block": ["32 * {VPT}"]},
    {"for_each": [{"V": 8, "LO": 128}, {"V": 16, "LO": 256}], "kernel": "k<float>", "when": {"if": "N > {LO}"}},
    {"kernel": "k<float>", "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i32"}]}
  ])J");
  PackageManifest out;
  ASSERT_EQ(problems(m, &out), std::vector<std::string>{});
  ASSERT_EQ(out.launches.size(), 6u);
  EXPECT_EQ(out.launches[0].field, "launches[0]{VPT=1}");
  EXPECT_EQ(out.launches[2].field, "launches[0]{VPT=4}");
  EXPECT_EQ(out.launches[3].field, "launches[1]{LO=128,V=8}");
  EXPECT_EQ(out.launches[5].field, "launches[2]");
  const SymbolValues n100 = {{"B", 3}, {"N", 100}};
  EXPECT_EQ(out.launches[2].block[0].evaluate(n100), 128);     // 32 * 4
  EXPECT_EQ(out.launches[2].when.if_expr->evaluate(n100), 1);  // 64 < 100 <= 128
  EXPECT_EQ(out.launches[1].when.if_expr->evaluate(n100), 0);
  EXPECT_EQ(out.launches[4].when.if_expr->evaluate(n100), 0);  // N > 256
  EXPECT_EQ(out.launches[3].grid[0].evaluate(n100), 3);        // from launch_defaults
  EXPECT_EQ(out.launches[3].args.size(), 3u);
  EXPECT_EQ(out.launches[5].args[2].type, ScalarType::i32);  // its own args win
  EXPECT_EQ(out.launches[5].block[0].evaluate(n100), 256);
}

TEST_F(ManifestTest, ForEachProblemsNameTheBinding) {
  json m = base_manifest();
  m["launches"][0]["for_each"] = {{"VPT", {1, 2}}};
  m["launches"][0]["block"] = {"{VPT} / 0"};
  const auto ps = problems(m);
  ASSERT_EQ(ps.size(), 2u) << ::testing::PrintToString(ps);
  EXPECT_NE(ps[0].find("launches[0]{VPT=1}.block[0]"), std::string::npos) << ps[0];
  EXPECT_NE(ps[1].find("launches[0]{VPT=2}.block[0]"), std::string::npos) << ps[1];

  m = base_manifest();
  m["launches"][0]["for_each"] = {{"VPT", json::array()}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].for_each.VPT",
                 "expected a non-empty array of at most 64 integers, found an array"));
  m["launches"][0]["for_each"] = {{"VPT", {1, "two"}}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].for_each.VPT[1]", "expected an integer, found \"two\""));
  m["launches"][0]["for_each"] = {{"2x", {1}}};
  EXPECT_EQ(only_problem(m), line("launches[0].for_each.2x",
                                  "expected an identifier (letters, digits and _, not starting "
                                  "with a digit, at most 64) as a name, "
                                  "found \"2x\""));
  m["launches"][0]["for_each"] = 3;
  EXPECT_NE(only_problem(m).find("launches[0].for_each: expected an object of integer lists"),
            std::string::npos);
  m["launches"][0]["for_each"] = {{"A", std::vector<int>(9, 1)}, {"B", std::vector<int>(9, 1)}};
  EXPECT_EQ(only_problem(m), line("launches[0].for_each", "expands to 81 launches, more than 64"));
  m["launches"][0]["for_each"] = {{"A", std::vector<int>(8, 1)}};
  m["launches"][1] = m["launches"][0];
  EXPECT_EQ(problems(m), std::vector<std::string>{});
  m["launches"][2] = m["launches"][0];
  m["launches"][3] = m["launches"][0];
  m["launches"][4] = m["launches"][0];
  m["launches"][5] = m["launches"][0];
  m["launches"][6] = m["launches"][0];
  m["launches"][7] = m["launches"][0];
  m["launches"][8] = m["launches"][0];
  EXPECT_EQ(only_problem(m), line("launches", "expands to 72 launches (for_each), more than 64"));
  // A placeholder left unreplaced is a bad expression, named where it is.
  m = base_manifest();
  m["launches"][0]["grid"] = {"{B}"};
  EXPECT_NE(only_problem(m).find("launches[0].grid[0]"), std::string::npos);
}

TEST_F(ManifestTest, OptionsPerDtypeAndPerLaunchAreChecked) {
  json m = base_manifest();
  m["guard"]["dtypes"] = {"f32", "f16"};
  m["launches"][0]["kernel"] = "k";
  m["nvrtc_options_for_dtype"] = {{"f16", {"-DHALF"}}, {"f32", {"-DFLOAT=1"}}};
  m["launches"][0]["nvrtc_options"] = {"-DTILE=4"};
  PackageManifest out;
  ASSERT_EQ(problems(m, &out), std::vector<std::string>{});
  EXPECT_EQ(out.nvrtc_options_for_dtype.at(DType::f16), std::vector<std::string>{"-DHALF"});
  EXPECT_EQ(out.launches[0].nvrtc_options, std::vector<std::string>{"-DTILE=4"});
  const auto units = compile_units(out);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].options, (std::vector<std::string>{"-DFLOAT=1", "-DTILE=4"}));
  EXPECT_EQ(units[1].name_expressions, std::vector<std::string>{"k"});

  m["nvrtc_options_for_dtype"] = {{"bf16", {"-DB"}}};
  EXPECT_EQ(only_problem(m),
            line("nvrtc_options_for_dtype.bf16",
                 "\"bf16\" is not in guard.dtypes: its options would never be used"));
  m["nvrtc_options_for_dtype"] = {{"f16", {"-I/etc"}}};
  EXPECT_NE(only_problem(m).find("nvrtc_options_for_dtype.f16[0]: "), std::string::npos);
  m.erase("nvrtc_options_for_dtype");
  m["launches"][0]["nvrtc_options"] = {"--include-path=/"};
  EXPECT_NE(only_problem(m).find("launches[0].nvrtc_options[0]: "), std::string::npos);
  // Without any, one unit: the package compiles as it always has.
  PackageManifest base;
  ASSERT_EQ(problems(base_manifest(), &base), std::vector<std::string>{});
  const auto one = compile_units(base);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one.front().options.empty());
  EXPECT_EQ(one.front().name_expressions, base.name_expressions());
}

TEST_F(ManifestTest, LaunchDefaultsAreChecked) {
  json m = base_manifest();
  m["launch_defaults"] = {{"grdi", {"B"}}};
  EXPECT_NE(
      only_problem(m).find("launch_defaults.grdi: unknown key \"grdi\"; did you mean \"grid\"?"),
      std::string::npos);
  m["launch_defaults"] = {{"for_each", {{"V", {1}}}}};
  EXPECT_NE(only_problem(m).find("launch_defaults.for_each: unknown key \"for_each\""),
            std::string::npos);
  m["launch_defaults"] = 7;
  EXPECT_NE(only_problem(m).find("launch_defaults: expected an object with launch keys"),
            std::string::npos);
  // A launch that omits a key with no default still misses it.
  m = base_manifest();
  const json args = m["launches"][0]["args"];
  m["launches"][0].erase("args");
  const auto ps = problems(m);
  ASSERT_FALSE(ps.empty());
  EXPECT_NE(ps.front().find("launches[0].args: missing"), std::string::npos) << ps.front();
  m["launch_defaults"] = {{"args", args}};
  EXPECT_EQ(problems(m), std::vector<std::string>{});
}

TEST_F(ManifestTest, BadStrideArguments) {
  json m = base_manifest();
  m["launches"][0]["args"].push_back({{"stride", {"x", 2}}, {"type", "i64"}});
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].stride[1]",
                                  "dimension 2 does not exist in x:[B, N] of op \"softmax\"; "
                                  "expected -2 to 1"));
  m["launches"][0]["args"][3] = {{"stride", {"x", -3}}, {"type", "i64"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].stride[1]",
                                  "dimension -3 does not exist in x:[B, N] of op \"softmax\"; "
                                  "expected -2 to 1"));
  m["launches"][0]["args"][3] = {{"stride", {"weights", 0}}, {"type", "i64"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].stride[0]",
                                  "op \"softmax\" has no tensor \"weights\"; expected one of: x, "
                                  "y"));
  m["launches"][0]["args"][3] = {{"stride", "x"}, {"type", "i64"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[3].stride",
                                  "expected [TENSOR, DIM] such as [\"x\", 0], found \"x\""));
  m["launches"][0]["args"][3] = {{"stride", {"x", 0}}, {"type", "f32"}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[3].type", "expected one of i32, i64, u32, u64, found \"f32\""));
  m["launches"][0]["args"][3] = {{"stride", {"x", 0}}};
  EXPECT_EQ(only_problem(m),
            line("launches[0].args[3].type", "missing; expected one of i32, i64, u32, u64"));
}

TEST_F(ManifestTest, BuiltInSymbolNamesAreReserved) {
  json m = base_manifest();
  m["symbols"]["dtype_size"] = {"x", 0};
  EXPECT_EQ(only_problem(m), line("symbols.dtype_size",
                                  "\"dtype_size\" is a built-in symbol (the bytes of one element "
                                  "of the call's dtype); choose another symbol name"));
  m = base_manifest();
  m["launches"][0]["grid"] = {"ceil_div(B * N, 16 / dtype_size)"};
  m["guard"]["shapes"] = {{"B", {{"min", 0}, {"max", 1024}}}};  // else the grid passes 2^31 - 1
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  EXPECT_EQ(builtin_symbol_names(), std::vector<std::string>{"dtype_size"});
}

TEST_F(ManifestTest, GuardRanksTheOpsTensorsCannotHaveAreRefused) {
  json m = base_manifest();
  m["guard"]["ranks"] = {3};
  m["symbols"] = {{"B", {"x", 0}}, {"N", {"x", -1}}};
  EXPECT_EQ(only_problem(m),
            line("guard.ranks",
                 "[3] leaves out rank 2, the rank of op \"softmax\"'s tensor \"x\" "
                 "(bound by symbol B): every call would fall outside the guard and "
                 "the package's kernels would never run; list 2, or leave guard.ranks out"));
  m["guard"]["ranks"] = {2, 3};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
}

TEST_F(ManifestTest, ALaunchsOwnCubinAndAssumptions) {
  // A kernel compiled once per specialization (a Triton kernel): each launch names its CUBIN and
  // what it was compiled to assume, over the symbols guard.require reads.
  pkg.write("k.1.sm_90.cubin", "not read by the manifest check");
  json m = base_manifest();
  m["launches"][0]["cubin"] = {{"sm_90", "k.1.sm_90.cubin"}};
  m["launches"][0]["assumes"] = {"N % 16 == 0", "align_x >= 16", "stride_y_0 % 16 == 0"};
  PackageManifest out;
  EXPECT_TRUE(problems(m, &out).empty()) << ::testing::PrintToString(problems(m));
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].cubins.at("sm_90"), "k.1.sm_90.cubin");
  ASSERT_EQ(out.launches[0].assumes.size(), 3u);
  EXPECT_EQ(out.launches[0].assumes[1].text(), "align_x >= 16");

  m["launches"][0]["assumes"] = {"stride_x_2 == 1"};  // x has rank 2
  EXPECT_NE(only_problem(m).find("launches[0].assumes[0]: in \"stride_x_2 == 1\" at column 1: "
                                 "unknown symbol 'stride_x_2'"),
            std::string::npos)
      << only_problem(m);
  m["launches"][0]["assumes"] = {"N % 16 == 0"};
  m["launches"][0]["cubin"] = {{"sm_90", "../outside.cubin"}};
  EXPECT_NE(only_problem(m).find("launches[0].cubin.sm_90:"), std::string::npos) << only_problem(m);
  m["launches"][0]["cubin"] = {{"sm_90", "missing.cubin"}};
  EXPECT_NE(only_problem(m).find("launches[0].cubin.sm_90:"), std::string::npos) << only_problem(m);
}

TEST_F(ManifestTest, GuardRequirePredicates) {
  json m = base_manifest();
  m["guard"]["require"] = {"B * N % 8 == 0", "stride_x_1 == 1 ? align_x >= 16 : numel_y < 65536"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  PackageManifest out;
  problems(m, &out);
  ASSERT_EQ(out.guard.require.size(), 2u);
  EXPECT_EQ(out.guard.require[1].text(), "stride_x_1 == 1 ? align_x >= 16 : numel_y < 65536");

  m["guard"]["require"] = {"stride_x_2 == 1"};  // x has rank 2
  EXPECT_NE(
      only_problem(m).find(
          "guard.require[0]: in \"stride_x_2 == 1\" at column 1: unknown symbol 'stride_x_2'"),
      std::string::npos)
      << only_problem(m);
  m["guard"]["require"] = {"16 % 8 == 0"};
  EXPECT_EQ(
      only_problem(m),
      line("guard.require[0]", "\"16 % 8 == 0\" names no symbol, so it is always true: remove it"));
  m["guard"]["require"] = json::array();
  EXPECT_NE(only_problem(m).find("guard.require: expected an array of 1 to 32 predicates"),
            std::string::npos);
  m["guard"]["require"] = {7};
  EXPECT_EQ(
      only_problem(m),
      line("guard.require[0]",
           "expected a predicate such as \"align_x >= 16\" (at most 1024 characters), found 7"));

  // when.if sees the tensor symbols too; other expressions do not.
  m = base_manifest();
  m["launches"][0]["when"] = {{"if", "align_x >= 16 && stride_x_0 == N"}};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  m["launches"][0]["grid"] = {"numel_x"};
  EXPECT_NE(only_problem(m).find("unknown symbol 'numel_x'"), std::string::npos) << only_problem(m);

  // Names of that form are reserved.
  m = base_manifest();
  m["symbols"]["numel_rows"] = {"x", 0};
  EXPECT_NE(
      only_problem(m).find("symbols.numel_rows: \"numel_rows\" has the form of a tensor symbol"),
      std::string::npos);
  EXPECT_TRUE(is_tensor_symbol_form("stride_x_1"));
  EXPECT_TRUE(is_tensor_symbol_form("stride_cu_seqlens_0"));
  EXPECT_FALSE(is_tensor_symbol_form("stride_x"));
  EXPECT_FALSE(is_tensor_symbol_form("stride_x_y"));
  EXPECT_FALSE(is_tensor_symbol_form("numel_"));
}

TEST_F(ManifestTest, AttributeArgumentOfTheOpNeedNotBePinned) {
  // layer_norm's eps, not listed in "attributes": the argument takes the call's value.
  json m = base_manifest();
  m["op"] = "layer_norm";
  m.erase("attributes");
  m["launches"][0]["args"] = json::parse(R"J([{"tensor": "x"}, {"tensor": "weight"},
    {"tensor": "bias"}, {"tensor": "y"}, {"attribute": "eps", "type": "f32"}])J");
  PackageManifest out;
  EXPECT_TRUE(problems(m, &out).empty()) << ::testing::PrintToString(problems(m));
  EXPECT_TRUE(out.attributes.empty());
  EXPECT_EQ(out.launches[0].args[4].kind, KernelArg::Kind::attribute);
  EXPECT_EQ(out.launches[0].args[4].name, "eps");
  // eps is not an integer (its default is 1e-5).
  m["launches"][0]["args"][4]["type"] = "i32";
  EXPECT_EQ(only_problem(m), line("launches[0].args[4].type",
                                  "attribute \"eps\" is not an integer; expected f32 or f64"));
  // Neither an attribute of the op nor declared.
  m["launches"][0]["args"][4] = {{"attribute", "epsilon"}, {"type", "f32"}};
  EXPECT_EQ(only_problem(m), line("launches[0].args[4].attribute",
                                  "expected the name of an attribute of the op or one declared in "
                                  "\"attributes\" (eps), found \"epsilon\""));
  // softmax's dim, declared: listed once.
  json s = base_manifest();
  s["launches"][0]["args"].push_back({{"attribute", "axis"}, {"type", "i32"}});
  EXPECT_EQ(only_problem(s), line("launches[0].args[3].attribute",
                                  "expected the name of an attribute of the op or one declared in "
                                  "\"attributes\" (dim), found \"axis\""));
}

// --- every problem at once, and load_manifest ---------------------------------------------------

TEST_F(ManifestTest, CollectsEveryProblem) {
  json m = base_manifest();
  m["format"] = "kgate-package/0";
  m["version"] = "one";
  m["sources"] = {"../k.cu"};
  m["nvrtc_options"] = {"-arch=sm_80"};
  m["launches"][0]["grid"] = {"B +"};
  m["guard"]["layouts"] = {"rowmajor"};
  const auto ps = problems(m);
  ASSERT_EQ(ps.size(), 6u) << ::testing::PrintToString(ps);
  EXPECT_EQ(ps[0].rfind(line("format", ""), 0), 0u);
  EXPECT_EQ(ps[1].rfind(line("version", ""), 0), 0u);
  EXPECT_EQ(ps[2].rfind(line("sources[0]", ""), 0), 0u);
  EXPECT_EQ(ps[3].rfind(line("nvrtc_options[0]", ""), 0), 0u);
  EXPECT_EQ(ps[4].rfind(line("launches[0].grid[0]", ""), 0), 0u);
  EXPECT_EQ(ps[5].rfind(line("guard.layouts[0]", ""), 0), 0u);
}

TEST_F(ManifestTest, LoadManifestThrowsEveryProblem) {
  json m = base_manifest();
  m["version"] = "one";
  m["guard"]["layouts"] = {"rowmajor"};
  pkg.write_json("kgate.json", m);
  try {
    load_manifest(pkg.path(), testing::catalogue_options());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::package);
    EXPECT_EQ(std::string(e.what()),
              line("version",
                   "expected a semantic version MAJOR.MINOR.PATCH such as \"1.2.0\", "
                   "found \"one\"") +
                  "\n" +
                  line("guard.layouts[0]",
                       "expected one of contiguous, strided, offset, found \"rowmajor\""));
  }
  m["version"] = "1.0.0";
  m["guard"].erase("layouts");
  pkg.write_json("kgate.json", m);
  EXPECT_EQ(load_manifest(pkg.path()).version, "1.0.0");
}

TEST(ManifestPaths, ResolveInPackage) {
  TempDir pkg;
  pkg.write("a/b.cu", "x");
  EXPECT_EQ(resolve_in_package(pkg.path(), "a/b.cu"), pkg.path() / "a" / "b.cu");
  EXPECT_EQ(resolve_in_package(pkg.path(), "./a/b.cu"), pkg.path() / "a" / "b.cu");
  try {
    resolve_in_package(pkg.path(), "../b.cu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::package);
    EXPECT_EQ(std::string(e.what()), (pkg.path() / "kgate.json").string() +
                                         ": \"../b.cu\" contains \"..\"; expected a path inside "
                                         "the package directory");
  }
}

// --- the example package and the schema --------------------------------------------------------

TEST(ManifestExample, SoftmaxRowsIsValid) {
  const std::filesystem::path dir =
      std::filesystem::path(KGATE_PACKAGE_SOURCE_DIR) / "examples" / "softmax_rows";
  PackageManifest m;
  const auto ps = check_manifest(dir, testing::catalogue_options(), &m);
  EXPECT_TRUE(ps.empty()) << format_problems(ps);
  EXPECT_EQ(m.name, "softmax_rows");
  EXPECT_EQ(m.guard.dtypes.size(), 3u);
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].kernel_for_dtype.size(), 3u);
  EXPECT_EQ(m.launches[0].grid[0].evaluate({{"B", 4096}, {"N", 4096}}), 4096);
  EXPECT_EQ(m.guard.variants.size(), 2u);
}

TEST(ManifestSchema, DescribesTheSameTopLevelKeys) {
  std::ifstream in(std::filesystem::path(KGATE_PACKAGE_SOURCE_DIR) / "kgate-package.schema.json");
  ASSERT_TRUE(in);
  const json schema = json::parse(in);
  EXPECT_EQ(schema.at("$schema"), "http://json-schema.org/draft-07/schema#");
  EXPECT_EQ(schema.at("properties").at("format").at("const"), kPackageFormat);
  EXPECT_EQ(schema.at("additionalProperties"), false);
  std::vector<std::string> keys;
  for (const auto& item : schema.at("properties").items()) keys.push_back(item.key());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"attributes",
                                            "build",
                                            "captured_inputs",
                                            "cubin",
                                            "description",
                                            "fatbin",
                                            "format",
                                            "guard",
                                            "include_dirs",
                                            "launch_defaults",
                                            "launches",
                                            "name",
                                            "nvrtc_options",
                                            "nvrtc_options_for_dtype",
                                            "op",
                                            "op_file",
                                            "outputs",
                                            "ptx",
                                            "sources",
                                            "symbols",
                                            "version",
                                            "workspace"}));
  EXPECT_EQ(schema.at("required"),
            json::parse(R"J(["format", "name", "version", "op", "launches", "guard"])J"));
  EXPECT_EQ(schema.at("anyOf").size(), 4u);  // sources, or a precompiled cubin, fatbin or ptx
  // Launch keys and argument kinds as the checker knows them.
  std::vector<std::string> launch_keys;
  for (const auto& item : schema.at("$defs").at("launch").at("properties").items())
    launch_keys.push_back(item.key());
  std::sort(launch_keys.begin(), launch_keys.end());
  EXPECT_EQ(launch_keys, (std::vector<std::string>{"args", "assumes", "block", "carveout",
                                                   "cluster", "cooperative", "cubin", "for_each",
                                                   "grid", "kernel", "max_dynamic_shared_mem",
                                                   "nvrtc_options", "pdl", "shared_mem", "when"}));
  std::vector<std::string> arg_kinds;
  for (const auto& variant : schema.at("$defs").at("arg").at("oneOf"))
    arg_kinds.push_back(variant.at("required").at(0).get<std::string>());
  EXPECT_EQ(arg_kinds, (std::vector<std::string>{"tensor", "workspace", "shape", "attribute",
                                                 "scalar", "stride"}));
}

// ---- hostile manifests: no crash, no flood, nothing harmful printed
// ----------------------------------

/// Every problem of the raw manifest text `text`, formatted.
std::string raw_problems(TempDir& pkg, const std::string& text) {
  pkg.write("kgate.json", text);
  return format_problems(check_manifest(pkg.path(), testing::catalogue_options(), nullptr));
}

TEST_F(ManifestTest, HugeVersionStringIsAProblemNotACrash) {
  json m = base_manifest();
  m["version"] = std::string(40000, '1');  // crashed std::regex (stack overflow)
  const std::string p = only_problem(m);
  EXPECT_NE(p.find("version: expected a semantic version"), std::string::npos) << p.substr(0, 300);
  EXPECT_LT(p.size(), 1000u);
  m = base_manifest();
  m["nvrtc_options"] = {"-DX=" + std::string(40000, 'a')};
  EXPECT_NE(only_problem(m).find("longer than 256 characters"), std::string::npos);
}

TEST_F(ManifestTest, NumberOverflowIsAProblem) {
  std::string text = base_manifest().dump();
  text.replace(text.find("\"block\":[256]"), 13, "\"block\":[1e400]");
  const std::string p = raw_problems(pkg, text);
  EXPECT_NE(p.find("(document): not valid JSON: number overflow"), std::string::npos) << p;
}

TEST_F(ManifestTest, DuplicateKeysAreRefused) {
  std::string text = base_manifest().dump();
  text.replace(text.find("\"block\":[256]"), 13, "\"block\":[256],\"block\":[1024]");
  const std::string p = raw_problems(pkg, text);
  EXPECT_NE(p.find("(document): the key \"block\" appears twice in one object"), std::string::npos)
      << p;
  // The same key in two different objects is fine.
  EXPECT_EQ(raw_problems(pkg, base_manifest().dump()), "");
}

TEST_F(ManifestTest, InvalidUtf8AndControlCharactersAreEscaped) {
  // A key with a NUL, an ANSI escape and a workflow command after a newline (valid JSON escapes).
  std::string text = base_manifest().dump();
  text.insert(1, "\"bad\\u0000key\\u001b[31m\\n::add-mask::x\\u0085\": 1,");
  std::string p = raw_problems(pkg, text);
  EXPECT_NE(p.find("unknown key \"bad\\u0000key\\u001b[31m\\n::add-mask::x\\u0085\""),
            std::string::npos)
      << p;
  EXPECT_EQ(p.find('\x1b'), std::string::npos);
  EXPECT_EQ(p.find('\0'), std::string::npos);
  EXPECT_EQ(p.find("\n::"), std::string::npos);
  // Raw bytes that are not UTF-8: not valid JSON, and the parser's message quotes them escaped.
  text = base_manifest().dump();
  text.insert(1, "\"bad\xff\xfe\": 1,");
  p = raw_problems(pkg, text);
  EXPECT_NE(p.find("not valid JSON"), std::string::npos) << p;
  EXPECT_EQ(valid_utf8(p), p);
}

TEST_F(ManifestTest, HeaderNamesThatAreNotUtf8DoNotBreakTheReport) {
  json m = base_manifest();
  m["include_dirs"] = {"inc"};
  pkg.write(std::string("inc/bad\xff.cuh"), "#pragma once\n");
  EXPECT_TRUE(problems(m).empty());
}

TEST_F(ManifestTest, ManyProblemsDoNotFloodTheLog) {
  json m = base_manifest();
  for (int i = 0; i < 40000; ++i) m["u" + std::to_string(i)] = 0;
  const auto ps = problems(m);
  ASSERT_EQ(ps.size(), kMaxProblems + 1);
  EXPECT_NE(ps.back().find("more problems are not listed"), std::string::npos) << ps.back();
  std::size_t bytes = 0;
  for (const auto& p : ps) bytes += p.size();
  EXPECT_LT(bytes, 64u * 1024) << "the problems of one manifest took " << bytes << " bytes";

  // Thousands of symbols, each problem naming them: the list is cut.
  json many = base_manifest();
  for (int i = 0; i < 3000; ++i) many["symbols"]["S" + std::to_string(i)] = json::array({"x", 0});
  many["launches"][0]["grid"] = {"nope"};
  std::string all;
  for (const auto& p : problems(many)) all += p + "\n";
  EXPECT_LT(all.size(), 64u * 1024) << all.substr(0, 500);
}

TEST_F(ManifestTest, LaunchSettingsThatCanNeverRunAreRefused) {
  struct Bad {
    const char* key;
    json value;
    const char* field;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {"grid", json::array({"1/0"}), "launches[0].grid[0]", "can never be evaluated: "},
      {"grid", json::array({"B % 0"}), "launches[0].grid[0]", "fails for every value tried"},
      {"grid", json::array({-1}), "launches[0].grid[0]",
       "a grid's x size is 1 to 2147483647; found -1"},
      {"grid", json::array({2147483648LL}), "launches[0].grid[0]", "found 2147483648"},
      {"grid", json::array({"B", 65536}), "launches[0].grid[1]",
       "a grid's y size is 1 to 65535; found 65536"},
      {"block", json::array({1, 1, 65}), "launches[0].block[2]",
       "a block's z size is 1 to 64; found 65"},
      {"shared_mem", "1099511627776", "launches[0].shared_mem",
       "dynamic shared memory is 0 to 232448"},
      {"shared_mem", -1, "launches[0].shared_mem", "found -1"},
      {"grid", json::array({"9223372036854775807 * 2"}), "launches[0].grid[0]",
       "can never be evaluated"},
      {"when", json::object({{"if", "1/0"}}), "launches[0].when.if", "can never be evaluated"},
  };
  for (const auto& c : cases) {
    json m = base_manifest();
    m["launches"][0][c.key] = c.value;
    std::string all;
    for (const auto& p : problems(m)) all += p + "\n";
    EXPECT_NE(all.find(std::string(c.field) + ": "), std::string::npos) << c.value << "\n" << all;
    EXPECT_NE(all.find(c.message), std::string::npos) << c.value << "\n" << all;
  }
  // A divisor that is zero only for some calls is the kernel's business, not an error.
  json m = base_manifest();
  m["launches"][0]["grid"] = {"(B > 1) * (1024 / (B - 1)) + 1"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
}

TEST_F(ManifestTest, LaunchSettingsAreJudgedAtTheLargestCallTheGuardAdmits) {
  // softmax's B reaches 65536: a y-grid of B fails the largest calls.
  json m = base_manifest();
  m["launches"][0]["grid"] = {1, "B"};
  std::string all;
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("launches[0].grid[1]: \"B\" is 65536 at the largest call the guard admits "
                     "(B=65536, N=262144), "
                     "past CUDA's y-grid limit of 65535"),
            std::string::npos)
      << all;
  m["guard"]["shapes"] = {{"B", {{"min", 0}, {"max", 4096}}}};  // bounded by the guard: fine
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  m = base_manifest();
  m["launches"][0]["grid"] = {1, "B"};
  m["launches"][0]["when"] = {{"if", "B <= 1024"}};  // never runs for the largest call
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  // An expression of symbols that overflows int64 for the largest call.
  m = base_manifest();
  m["launches"][0]["grid"] = {"N * N * N * N / 1024"};
  all.clear();
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(
      all.find(
          "launches[0].grid[0]: \"N * N * N * N / 1024\" cannot be evaluated at the largest call"),
      std::string::npos)
      << all;
  m["guard"]["shapes"] = {{"N", {{"min", 1}, {"max", 64}}}};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
  m = base_manifest();
  m["workspace"] =
      json::array({{{"name", "w"}, {"dtype", "f32"}, {"shape", {"N * N * N"}}}});  // 2^54 x 4 bytes
  all.clear();
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("workspace[0].shape: the workspace would take more than 2^48 bytes (256 TiB) "
                     "at the largest call"),
            std::string::npos)
      << all;
  m = base_manifest();
  m["launches"][0]["shared_mem"] = "N * 4";  // 1 MiB at N=262144
  all.clear();
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("launches[0].shared_mem: \"N * 4\" is 1048576 bytes at the largest call"),
            std::string::npos)
      << all;
}

TEST_F(ManifestTest, TooManyArgumentsForTheParameterSpace) {
  json m = base_manifest();
  json args = json::array({{{"tensor", "x"}}, {{"tensor", "y"}}});
  for (int i = 0; i < 5000; ++i) args.push_back({{"scalar", 1}, {"type", "i64"}});
  m["launches"][0]["args"] = args;
  std::string all;
  for (const auto& p : problems(m)) all += p + "\n";
  EXPECT_NE(all.find("launches[0].args: 5002 arguments take 40016 bytes; a kernel's parameters may "
                     "take at most 32764"),
            std::string::npos)
      << all.substr(0, 600);
}

TEST_F(ManifestTest, OneSourceThroughManyLinksIsRefused) {
  json m = base_manifest();
  m["sources"] = {"k.cu"};
  for (int i = 0; i < 3; ++i) {
    std::filesystem::create_symlink("k.cu", pkg.path() / ("link" + std::to_string(i) + ".cu"));
    m["sources"].push_back("link" + std::to_string(i) + ".cu");
  }
  const auto ps = problems(m);
  ASSERT_EQ(ps.size(), 3u) << ::testing::PrintToString(ps);
  EXPECT_EQ(ps[0], line("sources[1]",
                        "\"link0.cu\" is the same file as \"k.cu\" (through a link); "
                        "list each file once"));
}

TEST_F(ManifestTest, IntegersThatWouldWrapAreRefused) {
  json m = base_manifest();
  m["attributes"]["dim"] = 18446744073709551615ULL;
  EXPECT_EQ(only_problem(m), line("attributes.dim",
                                  "expected an integer between -2^53 and 2^53, found "
                                  "18446744073709551615"));
  m = base_manifest();
  m["guard"]["shapes"] = {{"N", {{"min", 1}, {"max", 18446744073709551615ULL}}}};
  EXPECT_NE(only_problem(m).find("guard.shapes.N.max: expected an integer >= 0, found "
                                 "18446744073709551615"),
            std::string::npos);
}

TEST_F(ManifestTest, WorkspacesNoMemoryHoldsAreRefused) {
  json m = base_manifest();
  m["workspace"] =
      json::parse(R"J([{"name": "w", "dtype": "f32", "shape": [4294967296, 4294967296]}])J");
  m["launches"][0]["args"].push_back({{"workspace", "w"}});
  EXPECT_EQ(only_problem(m), line("workspace[0].shape",
                                  "the workspace would take more than 2^48 bytes (256 TiB), more "
                                  "than any GPU holds"));
  m["workspace"][0]["shape"] = {"B", "1/0"};
  EXPECT_NE(only_problem(m).find("workspace[0].shape[1]: can never be evaluated"),
            std::string::npos);
  m["workspace"][0]["shape"] = {"B", "ceil_div(N, 256)"};
  EXPECT_TRUE(problems(m).empty()) << ::testing::PrintToString(problems(m));
}

// The decoded source: one walk over the JSON, every value with its field path, a launch per
// binding of its for_each with its launch_defaults applied, and what the schema refused left out.
TEST(ManifestSource, EveryValueCarriesItsFieldPath) {
  json m = base_manifest();
  m["launch_defaults"] = {{"block", {128}}};
  m["launches"][0].erase("block");
  m["launches"][0]["for_each"] = {{"V", {1, 2}}};
  m["launches"][0]["grid"] = {"ceil_div(B, {V})", 1};
  m["workspace"] =
      json::parse(R"J([{"name": "w", "dtype": "f32", "shape": ["N"], "zero": true}])J");
  const source::ManifestSource s = source::decode_manifest(m);
  ASSERT_EQ(s.launches.size(), 2u);
  EXPECT_EQ(s.launches[1].field, "launches[0]{V=2}");
  ASSERT_TRUE(s.launches[1].grid.has_value());
  EXPECT_EQ((*s.launches[1].grid)[0].text, "ceil_div(B, 2)");
  EXPECT_EQ((*s.launches[1].grid)[0].field, "launches[0]{V=2}.grid[0]");
  ASSERT_TRUE(s.launches[0].block.has_value());
  EXPECT_EQ((*s.launches[0].block)[0].integer, 128);
  ASSERT_EQ(s.launches[0].args.size(), 3u);
  EXPECT_EQ(s.launches[0].args[2].field, "launches[0]{V=1}.args[2]");
  EXPECT_EQ(s.launches[0].args[2].type, ScalarType::i64);
  ASSERT_EQ(s.symbols.size(), 2u);
  ASSERT_TRUE(s.symbols[1].binding.has_value());
  EXPECT_EQ(s.symbols[1].binding->dim.field, "symbols.N[1]");
  ASSERT_EQ(s.workspace.size(), 1u);
  EXPECT_EQ(s.workspace[0].zero->field, "workspace[0].zero");
  EXPECT_FALSE(s.launches_incomplete);
  EXPECT_TRUE(s.expansion_problems.empty());
}

TEST(ManifestSource, WhatTheSchemaRefusedIsLeftOutAndExpansionProblemsAreKept) {
  json m = base_manifest();
  m["sources"] = {"k.cu", 7, "k.cu"};            // a number (the schema) and a repeat (uniqueItems)
  m["symbols"]["not an identifier"] = {"x", 0};  // (the schema: propertyNames)
  m["symbols"]["M"] = {"x", "first"};            // not [TENSOR, DIM]: declared, no binding
  m["launches"][0]["for_each"] = {{"A", {1, 2, 3, 4, 5, 6, 7, 8}},
                                  {"C", {1, 2, 3, 4, 5, 6, 7, 8, 9}}};
  const source::ManifestSource s = source::decode_manifest(m);
  ASSERT_EQ(s.sources.paths.size(), 1u);
  EXPECT_EQ(s.sources.count, 3u);
  ASSERT_EQ(s.symbols.size(), 3u);  // B, M, N (in the order of the object's keys)
  EXPECT_EQ(s.symbols[1].name, "M");
  EXPECT_FALSE(s.symbols[1].binding.has_value());
  EXPECT_TRUE(s.symbols[2].binding.has_value());
  EXPECT_TRUE(s.launches.empty());
  EXPECT_TRUE(s.launches_incomplete);
  ASSERT_EQ(s.expansion_problems.size(), 1u);
  EXPECT_EQ(s.expansion_problems[0].first, "launches[0].for_each");
  EXPECT_EQ(s.expansion_problems[0].second, "expands to 72 launches, more than 64");
}

}  // namespace
}  // namespace kgate::package
