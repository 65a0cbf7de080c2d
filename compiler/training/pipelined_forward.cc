// GSPMD-style pipelining (see pipelined_forward.h).
#include "compiler/training/pipelined_forward.h"

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/training/ir_helpers.h"
#include "compiler/training/vectorize.h"

namespace podsim::compiler {

namespace {

std::string stages_marker(int64_t stages) { return fmt::format("fwd/pipeline/stages_{}", stages); }

std::vector<int64_t> concat_dims(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

InstrId emit_pipeline(ComputationBuilder& b, const Module& module, const PipelineRequest& r) {
  const int64_t S = r.stages, M = r.microbatches;
  if (S < 1 || M < 1) throw UserError({}, "pipelining: stages and microbatches must be >= 1", "");
  const Computation& body = module.computation(r.stage_body);
  std::vector<InstrId> body_params = body.parameters();
  if (body_params.size() != r.stacked_weights.size() + 1)
    throw UserError(
        {},
        fmt::format(
            "pipelining: stage body '{}' takes {} parameters, expected activation + {} weights",
            body.name(), body_params.size(), r.stacked_weights.size()),
        "");
  const Shape act = body.instr(body_params[0]).shape;  // [mb, ...]
  const Shape in_shape = b.shape(r.inputs);
  if (act.rank() < 1 || in_shape.rank() != act.rank() || in_shape.dim(0) != act.dim(0) * M ||
      !(body.root_instr().shape == act))
    throw UserError(
        {},
        fmt::format("pipelining: inputs {} do not split into {} microbatches of {} (or the stage "
                    "body does not return its activation shape)",
                    in_shape.to_string(false), M, act.to_string(false)),
        "");
  for (size_t j = 0; j < r.stacked_weights.size(); ++j) {
    const Shape ws = b.shape(r.stacked_weights[j]);
    Shape expected(body.instr(body_params[j + 1]).shape.dtype(),
                   concat_dims({S}, body.instr(body_params[j + 1]).shape.dims()));
    if (!(ws == expected))
      throw UserError({},
                      fmt::format("pipelining: stacked weight {} is {}, expected {}", j,
                                  ws.to_string(false), expected.to_string(false)),
                      "stack the stage weights on a leading dim of size stages");
  }
  const int64_t mb = act.dim(0);
  const std::vector<int64_t> rest(act.dims().begin() + 1, act.dims().end());
  const std::string saved_scope = b.op_name_scope();

  // Microbatch k = rows k, k+M, ...: [M mb, ...] -> [mb, M, ...] -> [M, mb, ...].
  b.set_op_name_scope("fwd/pipeline/split");
  std::vector<int64_t> perm{1, 0};
  for (int64_t d = 2; d <= static_cast<int64_t>(rest.size()) + 1; ++d) perm.push_back(d);
  InstrId by_microbatch = b.transpose(b.reshape(r.inputs, concat_dims({mb, M}, rest)), perm);

  b.set_op_name_scope(stages_marker(S));
  const std::vector<int64_t> state_dims = concat_dims({S}, act.dims());
  InstrId state = training::filled(b, Shape(act.dtype(), state_dims), 0.0);
  InstrId zero_microbatch = kNoId;
  std::vector<InstrId> outputs;  // [1, mb, ...] per microbatch
  for (int64_t t = 0; t < M + S - 1; ++t) {
    const std::string scope = fmt::format("pipeline_iter_{}", t);
    b.set_op_name_scope(fmt::format("fwd/{}/shift", scope));
    InstrId next;
    if (t < M) {
      std::vector<SliceDim> window{{t, t + 1, 1}, {0, mb, 1}};
      for (int64_t d : rest) window.push_back({0, d, 1});
      next = b.slice(by_microbatch, window);  // [1, mb, ...]
    } else {
      if (zero_microbatch == kNoId)
        zero_microbatch =
            training::filled(b, Shape(act.dtype(), concat_dims({1}, act.dims())), 0.0);
      next = zero_microbatch;
    }
    InstrId shifted = next;
    if (S > 1) {
      std::vector<SliceDim> head{{0, S - 1, 1}};
      for (int64_t d : act.dims()) head.push_back({0, d, 1});
      shifted = b.concatenate({next, b.slice(state, head)}, 0);
    }
    shifted = training::annotate_sharding(b, shifted, r.state_sharding);
    std::vector<InstrId> args{shifted};
    args.insert(args.end(), r.stacked_weights.begin(), r.stacked_weights.end());
    state = emit_vectorized(b, body, args, S, scope);
    state = training::annotate_sharding(b, state, r.state_sharding);
    if (t >= S - 1) {
      b.set_op_name_scope(fmt::format("fwd/{}/collect", scope));
      std::vector<SliceDim> last{{S - 1, S, 1}};
      for (int64_t d : act.dims()) last.push_back({0, d, 1});
      outputs.push_back(b.slice(state, last));
    }
  }
  // [M, mb, ...] -> [mb, M, ...] -> [M mb, ...] (row k + M i = microbatch k row i).
  b.set_op_name_scope("fwd/pipeline/merge");
  InstrId all = outputs.size() == 1 ? outputs[0] : b.concatenate(outputs, 0);
  InstrId merged = b.reshape(b.transpose(all, perm), in_shape.dims());
  b.set_op_name_scope(saved_scope);
  return merged;
}

void check_pipelined_forward(const Module& forward, int64_t stages) {
  const std::string marker = stages_marker(stages);
  for (const Instruction& in : forward.entry().instructions())
    if (in.op_name == marker) return;
  throw UserError(
      {},
      fmt::format("training step: pipeline_stages = {} needs a forward built with emit_pipeline "
                  "for {} stages",
                  stages, stages),
      "see compiler/training/pipelined_forward.h for the model contract");
}

}  // namespace podsim::compiler
