// Op files on the torch side (CPU): TorchScript references compiled in process, their checks and
// error messages, the compute dtype, reference errors, and every declarative value kind.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/op_file.hpp"
#include "gates/props/generators.hpp"
#include "references/script_op.hpp"

namespace kgate {
namespace {

using json = nlohmann::json;

json base_op() {
  return json::parse(R"({
    "format": "kgate-op/1",
    "name": "scaled",
    "symbols": [{"name": "B", "min": 1, "max": 64}, {"name": "N", "min": 1, "max": 512}],
    "inputs": [{"name": "x", "shape": ["B", "N"]}],
    "outputs": [{"name": "y", "shape": ["B", "N"]}],
    "dtypes": ["f32", "f16"],
    "attributes": {"alpha": 2.0},
    "reduced": "N",
    "reference": "def reference(x: Tensor, alpha: float) -> Tensor:\n    return x * alpha\n"
  })");
}

OpFile file_of(const json& doc) { return parse_op_file(doc.dump(), "ops/scaled.json"); }

std::string error_of(const json& doc) {
  try {
    script_reference(file_of(doc));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Case case_of(const OpSignature& op, DType dtype, std::vector<std::pair<std::string, int64_t>> dims,
             Values values = Values::normal) {
  Case c;
  c.op = op.name;
  c.dtype = dtype;
  c.dims = std::move(dims);
  c.values = values;
  c.seed = 0x5eed;
  return c;
}

TEST(ScriptOp, RunsTheReferenceWithAttributesAndTheOracleInFloat64) {
  const OpFile f = file_of(base_op());
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f16, {{"B", 3}, {"N", 5}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].scalar_type(), at::kHalf);
  const Tensors y = r.eager(in, call_attributes(f.signature, c));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(at::equal(y[0], in[0] * 2.0));
  const Tensors o = r.oracle({in[0].to(at::kDouble)}, call_attributes(f.signature, c));
  EXPECT_EQ(o[0].scalar_type(), at::kDouble);
}

TEST(ScriptOp, ComputeIsOpmathForEagerAndFloat64ForTheOracle) {
  json d = base_op();
  d["outputs"][0]["dtype"] = "f32";
  d["dtypes"] = {"f16"};
  d["reference"] = "def reference(x: Tensor, compute: int) -> Tensor:\n    return x.to(compute)\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f16, {{"B", 2}, {"N", 4}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  EXPECT_EQ(r.eager(in, call_attributes(f.signature, c))[0].scalar_type(), at::kFloat);
  EXPECT_EQ(r.oracle({in[0].to(at::kDouble)}, call_attributes(f.signature, c))[0].scalar_type(),
            at::kDouble);
}

TEST(ScriptOp, AnOracleThatDropsToFloat32IsAReferenceError) {
  json d = base_op();
  d["reference"] =
      "def reference(x: Tensor, alpha: float) -> Tensor:\n    return (x.float() * "
      "alpha).to(x.dtype)\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f32, {{"B", 2}, {"N", 4}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  EXPECT_NO_THROW(r.eager(in, call_attributes(f.signature, c)));
  try {
    // .to(x.dtype) of a float64 x brings it back to float64: the oracle's input upcast survives...
    r.oracle({in[0].to(at::kDouble)}, call_attributes(f.signature, c));
  } catch (const ReferenceError&) {
    FAIL() << "a reference that returns x.dtype is float64 in the oracle";
  }
  d["reference"] =
      "def reference(x: Tensor, alpha: float) -> Tensor:\n    return x.float() * alpha\n";
  const OpFile g = file_of(d);
  const OpReference rg = script_reference(g);
  try {
    rg.oracle({in[0].to(at::kDouble)}, call_attributes(g.signature, c));
    FAIL() << "an oracle output in float32 was accepted";
  } catch (const ReferenceError& e) {
    EXPECT_NE(std::string(e.what()).find("not float64"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.to(compute)"), std::string::npos) << e.what();
  }
}

TEST(ScriptOp, AReferenceThatThrowsOnACaseIsAReferenceError) {
  json d = base_op();
  d["reference"] =
      "def reference(x: Tensor, alpha: float, N: int) -> Tensor:\n"
      "    assert N != 7, 'seven is not supported'\n"
      "    return x * alpha\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case ok = case_of(f.signature, DType::f32, {{"B", 2}, {"N", 4}});
  EXPECT_NO_THROW(
      r.eager(r.make_inputs(ok, f.signature, at::kCPU), call_attributes(f.signature, ok)));
  const Case bad = case_of(f.signature, DType::f32, {{"B", 2}, {"N", 7}});
  try {
    r.eager(r.make_inputs(bad, f.signature, at::kCPU), call_attributes(f.signature, bad));
    FAIL() << "no error";
  } catch (const ReferenceError& e) {
    EXPECT_NE(std::string(e.what()).find("seven is not supported"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("op 'scaled' (ops/scaled.json): reference() failed"),
              std::string::npos)
        << e.what();
  }
}

TEST(ScriptOp, CompileErrorsShowTorchScriptsMessageAndLine) {
  json d = base_op();
  d["reference"] = "def reference(x: Tensor, alpha: float) -> Tensor:\n    y = x *\n    return y\n";
  const std::string what = error_of(d);
  EXPECT_NE(what.find("ops/scaled.json: reference: TorchScript does not compile it"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("reference source, line 3"), std::string::npos)
      << what;  // where the statement ends
  EXPECT_NE(what.find("y = x *"), std::string::npos) << what;
}

TEST(ScriptOp, SignatureMismatchesAreNamed) {
  json d = base_op();
  d["reference"] = "def reference(x: Tensor, beta: float) -> Tensor:\n    return x * beta\n";
  EXPECT_NE(error_of(d).find("parameter 'beta' is neither an input, an attribute, a shape symbol, "
                             "'compute' nor a tensor's 'NAME_dtype'"),
            std::string::npos)
      << error_of(d);
  d["reference"] = "def reference(alpha: float) -> Tensor:\n    return torch.zeros(1)\n";
  EXPECT_NE(error_of(d).find("input 'x' is not a parameter of reference()"), std::string::npos)
      << error_of(d);
  d["reference"] = "def reference(x: Tensor) -> Tuple[Tensor, Tensor]:\n    return x, x\n";
  EXPECT_NE(error_of(d).find("returns 2 tensors; the op file declares 1 outputs"),
            std::string::npos)
      << error_of(d);
  d["reference"] = "def reference(x: Tensor) -> int:\n    return 1\n";
  EXPECT_NE(error_of(d).find("expected a Tensor"), std::string::npos) << error_of(d);
  d["reference"] = "def reference(x: int) -> Tensor:\n    return torch.zeros(1)\n";
  EXPECT_NE(error_of(d).find("annotate it `x: Tensor`"), std::string::npos) << error_of(d);
}

TEST(ScriptOp, OpsThatReachFilesAreRefused) {
  json d = base_op();
  d["reference"] =
      "def helper(x: Tensor) -> Tensor:\n"
      "    return torch.from_file('/proc/self/environ', False, 64).to(x.dtype)\n"
      "def reference(x: Tensor, alpha: float) -> Tensor:\n"
      "    if alpha > 100.0:\n"
      "        return helper(x)\n"
      "    return x * alpha\n";
  const std::string what = error_of(d);
  EXPECT_NE(what.find("calls aten::from_file, which a reference may not call"), std::string::npos)
      << what;
  EXPECT_TRUE(script_op_forbidden("aten::from_file"));
  EXPECT_TRUE(script_op_forbidden("aten::save"));
  EXPECT_TRUE(script_op_forbidden("mylib::anything"));
  EXPECT_FALSE(script_op_forbidden("aten::softmax"));
  EXPECT_FALSE(script_op_forbidden("prim::If"));
}

TEST(ScriptOp, MultipleOutputsWithIntegerDtypes) {
  json d = base_op();
  d["outputs"] = json::parse(
      R"([{"name": "values", "shape": ["B", 2]}, {"name": "indices", "shape": ["B", 2], "dtype": "i64"}])");
  d["symbols"][1]["min"] = 2;
  d["reference"] =
      "def reference(x: Tensor) -> Tuple[Tensor, Tensor]:\n    v, i = torch.topk(x, 2)\n    return "
      "v, i\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f32, {{"B", 3}, {"N", 9}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  const Tensors out = r.eager(in, call_attributes(f.signature, c));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].scalar_type(), at::kLong);
  // The oracle keeps integer outputs' dtype and upcasts the floating ones.
  const Tensors o = r.oracle({in[0].to(at::kDouble)}, call_attributes(f.signature, c));
  EXPECT_EQ(o[0].scalar_type(), at::kDouble);
  EXPECT_EQ(o[1].scalar_type(), at::kLong);
}

TEST(ScriptOp, DeclarativeValueKinds) {
  json d = base_op();
  d["symbols"] =
      json::parse(R"([{"name": "B", "min": 1, "max": 64}, {"name": "V", "min": 1, "max": 1000},
                                  {"name": "N", "min": 1, "max": 512}])");
  d["inputs"] = json::parse(R"([
    {"name": "x", "shape": ["B", "N"], "values": {"kind": "uniform", "low": -2, "high": 3}},
    {"name": "idx", "shape": ["B", "N"], "dtype": "i64", "values": {"kind": "integers", "low": 1, "high": "V-1"}},
    {"name": "perm", "shape": ["B", "N"], "dtype": "i32", "values": {"kind": "permutation"}},
    {"name": "p", "shape": ["B", "N"], "values": {"kind": "simplex"}},
    {"name": "m", "shape": ["B", "N"], "values": {"kind": "mask", "p": 0.25}},
    {"name": "s", "shape": ["B", "N"], "values": {"kind": "sorted"}},
    {"name": "v", "shape": ["B", "N"], "values": {"kind": "positive", "low": 0.5}}
  ])");
  d["reference"] =
      "def reference(x: Tensor, idx: Tensor, perm: Tensor, p: Tensor, m: Tensor, s: Tensor, v: "
      "Tensor) -> Tensor:\n"
      "    return x\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f32, {{"B", 4}, {"V", 10}, {"N", 37}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  ASSERT_EQ(in.size(), 7u);
  EXPECT_GE(in[0].min().item<double>(), -2);
  EXPECT_LT(in[0].max().item<double>(), 3);
  EXPECT_EQ(in[1].scalar_type(), at::kLong);
  EXPECT_GE(in[1].min().item<int64_t>(), 1);
  EXPECT_LE(in[1].max().item<int64_t>(), 9);
  EXPECT_EQ(in[1].reshape({-1})[0].item<int64_t>(), 9);   // edges: the top first
  EXPECT_EQ(in[1].reshape({-1})[-1].item<int64_t>(), 1);  // and the bottom last
  EXPECT_EQ(in[2].scalar_type(), at::kInt);
  EXPECT_TRUE(at::equal(std::get<0>(in[2].to(at::kLong).sort(-1)), at::arange(37).expand({4, 37})));
  EXPECT_TRUE(at::allclose(in[3].sum(-1), at::ones({4})));
  EXPECT_TRUE(at::logical_or(in[4].eq(0), in[4].eq(1)).all().item<bool>());
  EXPECT_TRUE(at::equal(in[5], std::get<0>(in[5].sort(-1))));
  EXPECT_GE(in[6].min().item<double>(), 0.5);
  // A case id replays bitwise.
  const Tensors again = r.make_inputs(c, f.signature, at::kCPU);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_TRUE(at::equal(in[i], again[i])) << i;
}

TEST(ScriptOp, GeneratedCasesRespectMultiplesAndRelations) {
  json d = base_op();
  d["symbols"] = json::parse(
      R"([{"name": "G", "min": 1, "max": 8}, {"name": "H", "min": 1, "max": 64, "multiple_of": 4},
                                  {"name": "N", "min": 1, "max": 512}])");
  d["relations"] = {"H % G == 0"};
  d["inputs"][0]["shape"] = {"H", "N"};
  d["outputs"][0]["shape"] = {"H", "N"};
  const OpFile f = file_of(d);
  props::KernelTraits traits;
  traits.accepts_strided = true;
  props::GeneratorOptions gen;
  gen.cases = 200;
  const auto cases = props::generate_cases(f.signature, traits, gen);
  ASSERT_EQ(cases.size(), 200u);
  std::set<int64_t> gs;
  for (const auto& c : cases) {
    EXPECT_EQ(c.dim("H") % 4, 0) << c.id();
    EXPECT_EQ(c.dim("H") % c.dim("G"), 0) << c.id();
    EXPECT_TRUE(props::in_domain(f.signature, c));
    gs.insert(c.dim("G"));
  }
  EXPECT_GE(gs.size(), 3u);  // the relation does not pin G
}

}  // namespace
}  // namespace kgate

namespace kgate {
namespace {

// References written with torch.nn.functional (core/functional_names.hpp) compile, and compute what
// torch.nn.functional does: softmax with dim by keyword, embedding with its arguments the other
// way.
TEST(ScriptOp, TorchNnFunctionalNamesCompileToTheirAtenOps) {
  json d = base_op();
  d["reference"] =
      "def reference(x: Tensor, alpha: float) -> Tensor:\n"
      "    return torch.nn.functional.softmax(x * alpha, dim=-1, dtype=x.dtype)\n";
  const OpFile f = file_of(d);
  const OpReference r = script_reference(f);
  const Case c = case_of(f.signature, DType::f32, {{"B", 3}, {"N", 7}});
  const Tensors in = r.make_inputs(c, f.signature, at::kCPU);
  const Tensors y = r.eager(in, call_attributes(f.signature, c));
  EXPECT_TRUE(at::allclose(y[0], at::softmax(in[0] * 2.0, -1)));

  d["inputs"] = json::parse(R"([{"name": "x", "shape": ["B", "N"]},
                                {"name": "ids", "shape": ["B"], "dtype": "i64", "values": {"kind": "integers", "low": 0, "high": "B-1"}}])");
  d["outputs"] = json::parse(R"([{"name": "y", "shape": ["B", "N"]}])");
  d["reference"] =
      "def reference(x: Tensor, ids: Tensor, alpha: float) -> Tensor:\n"
      "    return torch.nn.functional.embedding(ids, x) * alpha\n";
  const OpFile g = file_of(d);
  const OpReference e = script_reference(g);
  const Case ce = case_of(g.signature, DType::f32, {{"B", 4}, {"N", 5}});
  const Tensors ein = e.make_inputs(ce, g.signature, at::kCPU);
  const Tensors ey = e.eager(ein, call_attributes(g.signature, ce));
  EXPECT_TRUE(at::allclose(ey[0], ein[0].index_select(0, ein[1]) * 2.0));
}

TEST(ScriptOp, ATorchNnFunctionalNameWithoutAnEquivalentIsRefusedByLine) {
  json d = base_op();
  d["reference"] =
      "def reference(x: Tensor, alpha: float) -> Tensor:\n"
      "    return torch.nn.functional.normalize(x, dim=-1) * alpha\n";
  const std::string e = error_of(d);
  EXPECT_NE(
      e.find("ops/scaled.json: reference: line 2: torch.nn.functional.normalize is not accepted"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("accepted: softmax, log_softmax"), std::string::npos) << e;
}

}  // namespace
}  // namespace kgate
