// Op files (kgate-op/1): what a valid file becomes, and the FILE: FIELD: message of each mistake.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/op_file.hpp"

namespace kgate {
namespace {

using json = nlohmann::json;

json valid() {
  return json::parse(R"({
    "format": "kgate-op/1",
    "name": "fused_add_rms_norm",
    "summary": "residual += x; y = rms_norm(residual) * weight",
    "symbols": [{"name": "T", "min": 0, "max": 8192, "typical_max": 256},
                {"name": "H", "min": 1, "max": 16384, "multiple_of": 8}],
    "relations": ["H % 8 == 0"],
    "inputs": [{"name": "x", "shape": ["T", "H"], "values": {"kind": "norm"}},
               {"name": "residual", "shape": ["T", "H"]},
               {"name": "weight", "shape": ["H"], "values": {"kind": "normal", "mean": 1, "std": 0.5}},
               {"name": "pos", "shape": ["T"], "dtype": "i64", "values": {"kind": "integers", "low": 0, "high": "H-1"}}],
    "outputs": [{"name": "y", "shape": ["T", "H"]}, {"name": "residual_out", "shape": ["T", "H"]},
                {"name": "count", "shape": [1], "dtype": "i32"}],
    "dtypes": ["bf16", "f16"],
    "attributes": {"eps": 1e-6, "interleaved": true},
    "reduced": "H",
    "nan": "ignore",
    "rule": "ref_ratio",
    "tolerance": {"bf16": {"rtol": 0.02}},
    "deterministic": false,
    "speed_shapes": [{"T": 4096, "H": 4096}],
    "reference": ["def reference(x: Tensor, residual: Tensor, weight: Tensor, pos: Tensor, eps: float):",
                  "    return x, x, pos"]
  })");
}

std::string problems_of(const json& doc) {
  try {
    parse_op_file(doc.dump(), "ops/my_op.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "";
}

TEST(OpFile, ValidFileBecomesASignature) {
  const OpFile f = parse_op_file(valid().dump(), "ops/my_op.json");
  const OpSignature& op = f.signature;
  EXPECT_EQ(op.name, "fused_add_rms_norm");
  EXPECT_EQ(op.origin, "ops/my_op.json");
  ASSERT_EQ(op.symbols.size(), 2u);
  EXPECT_EQ(op.symbols[0].name, "T");  // declaration order: the order of a case id's dims
  EXPECT_EQ(op.symbols[1].multiple_of, 8);
  ASSERT_EQ(op.inputs.size(), 4u);
  EXPECT_EQ(op.inputs[0].values.kind, "norm");
  EXPECT_EQ(op.inputs[1].values.kind, "case");  // the default
  EXPECT_EQ(op.inputs[2].values.mean, 1);
  EXPECT_EQ(op.inputs[3].dtype, "i64");
  EXPECT_EQ(op.inputs[3].values.high_expr, "H-1");
  EXPECT_EQ(op.tensor_dtype(op.inputs[0], DType::bf16), DType::bf16);
  EXPECT_EQ(op.tensor_dtype(op.outputs[2], DType::bf16), DType::i32);
  EXPECT_EQ(op.attributes.at("interleaved"), 1);
  EXPECT_EQ(op.reduced_symbol, "H");
  EXPECT_EQ(op.nan_contract, NanContract::ignore);
  EXPECT_EQ(op.default_rule, "ref_ratio");
  EXPECT_FALSE(op.deterministic);
  EXPECT_DOUBLE_EQ(op.tolerance_for(DType::bf16).rtol, 0.02);
  EXPECT_DOUBLE_EQ(op.tolerance_for(DType::bf16).atol, 1e-5);  // kept from the default
  EXPECT_DOUBLE_EQ(op.tolerance_for(DType::f16).rtol, 1e-3);
  ASSERT_EQ(op.speed_shapes.size(), 1u);
  EXPECT_EQ(op.speed_shapes[0][1], (std::pair<std::string, int64_t>{"H", 4096}));
  EXPECT_NE(f.reference.find("def reference"), std::string::npos);
  EXPECT_EQ(op.relations, std::vector<std::string>{"H % 8 == 0"});
  EXPECT_EQ(op.alias_input(op.outputs[1]), -1);
  EXPECT_TRUE(op.tolerance_scale_symbol.empty());

  // One-byte dtypes, indices and a growing tolerance.
  json more = valid();
  more["outputs"][0]["dtype"] = "i8";
  more["outputs"][1]["dtype"] = "float8_e4m3fn";
  more["outputs"][2] = {{"name", "top"},
                        {"shape", {"T", 2}},
                        {"dtype", "i64"},
                        {"index_into", "x"},
                        {"index_order", "any"}};
  more["inputs"][3]["dtype"] = "bool";
  more["inputs"][3]["values"] = {{"kind", "mask"}, {"p", 0.25}};
  more["tolerance_scale"] = {{"symbol", "H"}, {"power", 0.5}};
  const OpSignature m = parse_op_file(more.dump(), "ops/my_op.json").signature;
  EXPECT_EQ(m.tensor_dtype(m.outputs[0], DType::bf16), DType::i8);
  EXPECT_EQ(m.tensor_dtype(m.outputs[1], DType::bf16), DType::f8e4m3);
  EXPECT_EQ(m.tensor_dtype(m.inputs[3], DType::bf16), DType::b8);
  EXPECT_EQ(m.outputs[2].index_into, "x");
  EXPECT_EQ(m.outputs[2].index_order, "any");
  EXPECT_EQ(m.tolerance_scale_symbol, "H");
  EXPECT_DOUBLE_EQ(m.tolerance_scale_power, 0.5);

  json in_place = valid();
  in_place["outputs"][1]["alias"] = "residual";
  const OpFile g = parse_op_file(in_place.dump(), "ops/my_op.json");
  EXPECT_EQ(g.signature.alias_input(g.signature.outputs[1]), 1);
}

TEST(OpFile, EachMistakeNamesFileFieldAndFix) {
  struct Mistake {
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Mistake> mistakes = {
      {[](json& d) { d["format"] = "kgate-op/2"; },
       "ops/my_op.json: format: \"kgate-op/2\" is not an op file format"},
      {[](json& d) { d.erase("reference"); },
       "ops/my_op.json: reference: missing; expected TorchScript source of `def reference"},
      {[](json& d) { d["refrence"] = "x"; }, "ops/my_op.json: refrence: unknown key"},
      {[](json& d) { d["inputs"][0]["shape"][1] = "K"; }, "inputs[0].shape[1]: in \"K\""},
      {[](json& d) { d["inputs"][3].erase("values"); },
       "inputs[3].values: an integer tensor needs values"},
      {[](json& d) { d["inputs"][0]["values"]["kind"] = "gaussian"; },
       "inputs[0].values.kind: expected one of case, norm, normal, uniform, positive, integers, "
       "sorted, simplex, "
       "permutation, mask, found \"gaussian\""},
      {[](json& d) { d["inputs"][2]["values"]["sigma"] = 1; },
       "inputs[2].values.sigma: unknown key"},
      {[](json& d) { d["dtypes"][0] = "i32"; }, "dtypes[0]: a case dtype must be floating"},
      {[](json& d) { d["dtypes"][0] = "f8e4m3"; }, "dtypes[0]: f8e4m3 is not a case dtype"},
      {[](json& d) { d["outputs"][2]["index_into"] = "w"; },
       "outputs[2].index_into: 'w' is not an input of the op"},
      {[](json& d) { d["outputs"][0]["index_into"] = "x"; },
       "outputs[0].index_into: an output holding indices needs an integer \"dtype\""},
      {[](json& d) { d["outputs"][2]["index_into"] = "x"; },
       "outputs[2].index_into: indices select along the last dim of 'x'"},
      {[](json& d) { d["outputs"][2]["index_order"] = "sorted"; },
       "outputs[2].index_order: expected \"reference\""},
      {[](json& d) {
         d["tolerance_scale"] = {{"symbol", "K"}};
       },
       "tolerance_scale.symbol: 'K' is not a declared symbol"},
      {[](json& d) {
         d["tolerance_scale"] = {{"symbol", "H"}, {"power", 3}};
       },
       "tolerance_scale.power: expected a number > 0 and <= 2, found 3"},
      {[](json& d) { d["symbols"][1]["max"] = 0; }, "symbols[1].max: is below min"},
      {[](json& d) { d["reduced"] = "N"; }, "reduced: 'N' is not a declared symbol"},
      {[](json& d) { d["outputs"][0]["name"] = "x"; },
       "outputs[0].name: 'x' is also an input's name"},
      {[](json& d) { d["relations"][0] = "H %% 8"; }, "relations[0]:"},
      {[](json& d) { d["speed_shapes"][0].erase("T"); },
       "speed_shapes[0]: gives no value for symbol 'T'"},
      {[](json& d) { d["tolerance"]["bf16"]["rtol"] = -1; },
       "tolerance.bf16.rtol: expected a number >= 0, found -1"},
      {[](json& d) { d["reference"] = "def ref(x: Tensor):\n    return x\n"; },
       "reference: the source defines no function `reference`"},
      {[](json& d) { d["name"] = "rms norm"; },
       "name: expected an identifier (letters, digits and _, not starting with a digit, at most "
       "64), found \"rms norm\""},
      {[](json& d) { d["outputs"][1]["alias"] = "resid"; },
       "outputs[1].alias: 'resid' is not an input"},
      {[](json& d) { d["outputs"][2]["alias"] = "residual"; },
       "outputs[2].alias: input 'residual' has another shape or dtype"},
      {[](json& d) {
         d["outputs"][1]["alias"] = "residual";
         d["outputs"][0]["alias"] = "residual";
       },
       "outputs[1].alias: input 'residual' is already written in place by another output"},
  };
  for (const auto& m : mistakes) {
    json d = valid();
    m.edit(d);
    const std::string what = problems_of(d);
    EXPECT_NE(what.find(m.expected), std::string::npos)
        << "expected: " << m.expected << "\ngot: " << what;
  }
}

TEST(OpFile, MinBytesDeclaresTheSpeedOfLightFloor) {
  json d = valid();
  d["min_bytes"] = {{"read", "bytes_x + bytes_residual + bytes_weight"},
                    {"written", "bytes_y + T * dtype_size"}};
  const OpSignature op = parse_op_file(d.dump(), "ops/my_op.json").signature;
  EXPECT_EQ(op.min_bytes_read, "bytes_x + bytes_residual + bytes_weight");
  EXPECT_EQ(op.min_bytes_written, "bytes_y + T * dtype_size");
  EXPECT_TRUE(parse_op_file(valid().dump(), "ops/my_op.json")
                  .signature.min_bytes_read.empty());  // optional

  json typo = valid();
  typo["min_bytes"] = {{"read", "bytes_z"}};
  EXPECT_NE(problems_of(typo).find("ops/my_op.json: min_bytes.read: "), std::string::npos)
      << problems_of(typo);
  EXPECT_NE(problems_of(typo).find("bytes_z"), std::string::npos) << problems_of(typo);
  json key = valid();
  key["min_bytes"] = {{"reads", "bytes_x"}};
  EXPECT_NE(problems_of(key).find("min_bytes.reads: unknown key"), std::string::npos)
      << problems_of(key);
}

TEST(OpFile, ConditioningMakesConditionedTheDefaultRule) {
  json d = valid();
  d.erase("rule");
  EXPECT_EQ(parse_op_file(d.dump(), "ops/my_op.json").signature.default_rule, "allclose");
  d["conditioning"] = {{"terms", "2*H"}};
  const OpFile f = parse_op_file(d.dump(), "ops/my_op.json");
  EXPECT_EQ(f.signature.conditioning_terms, "2*H");
  EXPECT_EQ(f.signature.default_rule, "conditioned");
  EXPECT_TRUE(f.magnitude.empty());
  EXPECT_FALSE(f.signature.accumulate_in_case_dtype);  // float32 unless the file says "case"
  d["conditioning"]["accumulate"] = "case";
  EXPECT_TRUE(parse_op_file(d.dump(), "ops/my_op.json").signature.accumulate_in_case_dtype);
  d["conditioning"]["accumulate"] = "float32";
  EXPECT_FALSE(parse_op_file(d.dump(), "ops/my_op.json").signature.accumulate_in_case_dtype);
  d["conditioning"]["accumulate"] = "bf16";
  EXPECT_NE(problems_of(d).find("conditioning.accumulate: expected \"float32\""), std::string::npos)
      << problems_of(d);
  d["conditioning"].erase("accumulate");
  d["rule"] = "ulp";  // a rule the file names wins
  EXPECT_EQ(parse_op_file(d.dump(), "ops/my_op.json").signature.default_rule, "ulp");
  d.erase("rule");
  d["conditioning"]["magnitude"] =
      json::array({"def magnitude(x: Tensor) -> Tensor:", "    return x.abs()"});
  EXPECT_NE(parse_op_file(d.dump(), "ops/my_op.json").magnitude.find("def magnitude"),
            std::string::npos);
  d["conditioning"] = {
      {"magnitude", "def magnitude(x: Tensor) -> Tensor:\n    return x"}};  // no terms
  EXPECT_NE(problems_of(d).find("conditioning.terms: missing"), std::string::npos)
      << problems_of(d);
}

// The structure comes from the schema (core/kgate-op.schema.json): each kind of structural mistake
// is said as file: field: what was found and what is expected.
TEST(OpFile, StructuralMistakesNameFileAndField) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> mistakes = {
      {[](json& d) { d["symbols"][0]["max"] = "big"; },
       "ops/my_op.json: symbols[0].max: expected an integer from 0 to 2147483648, found \"big\""},
      {[](json& d) { d["outputs"][0].erase("shape"); },
       "ops/my_op.json: outputs[0].shape: missing; expected an array"},
      {[](json& d) { d["tolerance_scle"] = json::object(); },
       "ops/my_op.json: tolerance_scle: unknown key \"tolerance_scle\"; did you mean "
       "\"tolerance_scale\"? expected one "
       "of: $schema, format, name,"},
      {[](json& d) { d["rule"] = "allclos"; },
       "ops/my_op.json: rule: expected allclose, ulp, ref_ratio, eager_relative or conditioned "
       "(default: "
       "conditioned with a \"conditioning\", else allclose; f16 and bf16 outputs take "
       "eager_relative unless "
       "this says ulp), found \"allclos\""},
      {[](json& d) {
         d["conditioning"] = {{"terms", "Q"}};
       },
       "ops/my_op.json: conditioning.terms: "},
      {[](json& d) {
         d["conditioning"] = {{"terms", "H"},
                              {"magnitude", "def size(x: Tensor) -> Tensor:\n    return x"}};
       },
       "ops/my_op.json: conditioning.magnitude: the source defines no function `magnitude`"},
      {[](json& d) { d["symbols"][1]["multiple_of"] = 0; },
       "ops/my_op.json: symbols[1].multiple_of: expected an integer from 1 to 1048576, found 0"},
      {[](json& d) { d["inputs"][0]["shape"][0] = 1.5; },
       "ops/my_op.json: inputs[0].shape[0]: expected an integer >= 0 or a string, found 1.5"},
      {[](json& d) { d["attributes"]["2x"] = 1; },
       "ops/my_op.json: attributes.2x: expected an identifier (letters, digits and _, not starting "
       "with a digit, at "
       "most 64) as a name, found \"2x\""},
  };
  for (const auto& [edit, expected] : mistakes) {
    json d = valid();
    edit(d);
    const std::string what = problems_of(d);
    EXPECT_NE(what.find(expected), std::string::npos)
        << "expected: " << expected << "\ngot: " << what;
    EXPECT_NE(what.find("(1 problem)"), std::string::npos) << what;
  }
}

TEST(OpFile, AllProblemsAreListedAtOnce) {
  json d = valid();
  d["dtypes"][0] = "i32";
  d["reduced"] = "N";
  d.erase("reference");
  const std::string what = problems_of(d);
  EXPECT_NE(what.find("(3 problems)"), std::string::npos) << what;
}

TEST(OpFile, BrokenJsonAndDuplicateKeys) {
  try {
    parse_op_file("{\"format\": \"kgate-op/1\",", "a.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.json: (document): not valid JSON"), std::string::npos)
        << e.what();
  }
  try {
    parse_op_file(R"({"format": "kgate-op/1", "name": "a", "name": "b"})", "a.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("appears twice"), std::string::npos) << e.what();
  }
}

TEST(OpFile, OpsPathsAreFilesOrDirectories) {
  EXPECT_THROW(op_file_paths("/nonexistent/ops"), Error);
  const auto paths = op_file_paths(std::string(KGATE_SOURCE_DIR) + "/tests/ops");
  EXPECT_GE(paths.size(), 4u);
  for (const auto& p : paths) EXPECT_EQ(p.substr(p.size() - 5), ".json");
  for (const auto& p : paths) EXPECT_NO_THROW(read_op_file(p)) << p;
}

TEST(OpFile, APackageDirectoryGivesTheOpFileItsManifestNames) {
  const std::string pkg = std::string(KGATE_SOURCE_DIR) + "/kernels/fused_add_rms_norm/package";
  const auto paths = op_file_paths(pkg);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0], pkg + "/fused_add_rms_norm.op.json");
  // A package of an op kgate builds in has no op file to give.
  try {
    op_file_paths(std::string(KGATE_SOURCE_DIR) + "/tests/packages/softmax_v1");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 'softmax' kgate builds in"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--package"), std::string::npos) << e.what();
  }
}

TEST(OpFile, TheSameOpIsEqualAfterParsingButSummary) {
  const json a = valid();
  json b = valid();
  EXPECT_TRUE(op_file_differences(a.dump(), a.dump(2)).empty());  // layout
  b["summary"] = "another summary";
  b["$schema"] = "https://example.com/kgate-op.schema.json";
  b["tolerance"]["bf16"]["rtol"] = 2e-2;  // the same number spelled otherwise
  EXPECT_TRUE(op_file_differences(a.dump(), b.dump()).empty());
}

TEST(OpFile, AnotherOpListsTheFieldsThatDiffer) {
  const json a = valid();
  json b = valid();
  b["tolerance"]["bf16"]["rtol"] = 0.05;  // looser
  b["nan"] = "propagate";
  b["inputs"][2]["values"]["std"] = 0.25;
  b.erase("deterministic");
  EXPECT_EQ(op_file_differences(a.dump(), b.dump()),
            (std::vector<std::string>{"deterministic", "inputs[2].values.std", "nan",
                                      "tolerance.bf16.rtol"}));
  json c = valid();
  c["dtypes"].push_back("f32");
  EXPECT_EQ(op_file_differences(a.dump(), c.dump()), std::vector<std::string>{"dtypes"});
  EXPECT_EQ(op_file_differences(a.dump(), "{not json"), std::vector<std::string>{"(document)"});
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType d : all_dtypes()) EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  EXPECT_EQ(parse_dtype("int8"), DType::i8);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::f8e4m3);
  EXPECT_EQ(dtype_size(DType::b8), 1u);
  EXPECT_EQ(dtype_size(DType::f8e4m3), 1u);
  EXPECT_TRUE(is_floating(DType::f8e4m3));
  EXPECT_FALSE(is_floating(DType::i8));
  EXPECT_DOUBLE_EQ(dtype_max(DType::f8e4m3), 448.0);
  try {
    parse_dtype("fp4");
    ADD_FAILURE() << "fp4 parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("i8, u8, bool, f8e4m3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kgate
