// Optimizer updates as IR. With g the gradient, w the weight, lr the
// learning rate, b1/b2 the decay rates and eps the epsilon:
//   SGD:  w' = w - lr g
//   Adam (Kingma & Ba 2015, algorithm 1), t = step + 1:
//         m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2
//         w' = w - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)
//   AdamW (Loshchilov & Hutter 2019, decoupled weight decay wd; optax.adamw):
//         w' = w - lr ((m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps) + wd w)
//   Adafactor (Shazeer & Stern 2018, algorithms 4/5 with a fixed step size
//   and fixed decay b2): G2 = g^2 + eps;
//     factored (rank >= 2): R' = b2 R + (1 - b2) mean_last(G2)
//                            C' = b2 C + (1 - b2) mean_second_last(G2)
//                            V  = R' C' / mean_last(R')  (outer product)
//     unfactored:            V = v' = b2 v + (1 - b2) G2
//     u = g / sqrt(V);  u /= max(1, RMS(u) / d)  (clipping, d > 0)
//     b1 > 0: m' = b1 m + (1 - b1) u, u = m'
//     w' = w - lr u
#include "compiler/training/optimizers.h"

#include <cassert>

#include <numeric>

namespace podsim::compiler {

const std::vector<OptimizerEntry>& optimizers() {
  static const std::vector<OptimizerEntry> table = [] {
    OptimizerOptions sgd;
    sgd.kind = OptimizerKind::kSgd;
    OptimizerOptions adam;
    adam.kind = OptimizerKind::kAdam;
    adam.beta1 = 0.9;  // Adam's usual first-moment decay (Kingma & Ba 2015)
    adam.beta2 = 0.999;
    adam.epsilon = 1e-8;
    // optax.adamw's defaults (b1 0.9, b2 0.999, eps 1e-8, weight_decay 1e-4);
    // MaxText's adam_weight_decay is 0.1: the value does not change the cost.
    OptimizerOptions adamw = adam;
    adamw.kind = OptimizerKind::kAdamW;
    adamw.weight_decay = 1e-4;
    OptimizerOptions adafactor;
    adafactor.kind = OptimizerKind::kAdafactor;
    return std::vector<OptimizerEntry>{{OptimizerKind::kSgd, "sgd", sgd},
                                       {OptimizerKind::kAdam, "adam", adam},
                                       {OptimizerKind::kAdamW, "adamw", adamw},
                                       {OptimizerKind::kAdafactor, "adafactor", adafactor}};
  }();
  return table;
}

OptimizerOptions optimizer_defaults(OptimizerKind kind) {
  for (const OptimizerEntry& e : optimizers())
    if (e.kind == kind) return e.defaults;
  assert(false && "every OptimizerKind has a registry entry");
  return {};
}

namespace {

bool adafactor_factored(const OptimizerOptions& options, const Shape& weight) {
  return options.kind == OptimizerKind::kAdafactor && options.factored && weight.rank() >= 2;
}

std::vector<int64_t> without_dim(const std::vector<int64_t>& dims, size_t dim) {
  std::vector<int64_t> out = dims;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
  return out;
}

// Small arithmetic vocabulary over one builder; scalars are broadcast to the
// other operand's shape.
struct Arith {
  ComputationBuilder& b;
  training::ReducerCache& reducers;
  const Shape& shape_of(InstrId x) const { return b.shape(x); }
  InstrId c(InstrId like, double v) { return training::filled(b, shape_of(like), v); }
  InstrId add(InstrId x, InstrId y) { return b.binary(Opcode::kAdd, x, y); }
  InstrId sub(InstrId x, InstrId y) { return b.binary(Opcode::kSubtract, x, y); }
  InstrId mul(InstrId x, InstrId y) { return b.binary(Opcode::kMultiply, x, y); }
  InstrId div(InstrId x, InstrId y) { return b.binary(Opcode::kDivide, x, y); }
  InstrId scale(InstrId x, double v) { return mul(x, c(x, v)); }
  // decay * old + (1 - decay) * update
  InstrId ema(InstrId old, InstrId update, double decay) {
    return add(scale(old, decay), scale(update, 1 - decay));
  }
  InstrId mean(InstrId x, int64_t dim) {
    double n = static_cast<double>(shape_of(x).dim(static_cast<int>(dim)));
    return scale(training::reduce_sum(b, reducers, x, {dim}), 1.0 / n);
  }
  InstrId expand(InstrId x, const Shape& to, std::vector<int64_t> dims) {
    return b.broadcast(x, to.dims(), std::move(dims));
  }
  // A scalar broadcast to `to` (itself when `to` is a scalar).
  InstrId splat(InstrId scalar, const Shape& to) {
    return to.rank() == 0 ? scalar : b.broadcast(scalar, to.dims(), {});
  }
};

}  // namespace

std::vector<OptimizerSlot> optimizer_slots(const OptimizerOptions& options, const Shape& weight) {
  const DType t = weight.dtype();
  switch (options.kind) {
    case OptimizerKind::kSgd:
      return {};
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return {{"m", SlotLayout::kLikeWeight, weight}, {"v", SlotLayout::kLikeWeight, weight}};
    case OptimizerKind::kAdafactor: {
      std::vector<OptimizerSlot> slots;
      if (options.beta1 > 0) slots.push_back({"m", SlotLayout::kLikeWeight, weight});
      if (adafactor_factored(options, weight)) {
        size_t r = static_cast<size_t>(weight.rank());
        slots.push_back(
            {"v_row", SlotLayout::kRowStats, Shape(t, without_dim(weight.dims(), r - 1))});
        slots.push_back(
            {"v_col", SlotLayout::kColumnStats, Shape(t, without_dim(weight.dims(), r - 2))});
      } else {
        slots.push_back({"v", SlotLayout::kLikeWeight, weight});
      }
      return slots;
    }
  }
  return {};
}

bool optimizer_needs_step(const OptimizerOptions& options) {
  return options.kind == OptimizerKind::kAdam || options.kind == OptimizerKind::kAdamW;
}

OptimizerUpdate emit_optimizer_update(ComputationBuilder& b, training::ReducerCache& reducers,
                                      const OptimizerOptions& options, const OptimizerInputs& in) {
  Arith a{b, reducers};
  const Shape weight_shape = b.shape(in.weight);
  const InstrId g = in.gradient;
  OptimizerUpdate out;
  switch (options.kind) {
    case OptimizerKind::kSgd:
      out.new_weight = a.sub(in.weight, a.scale(g, options.learning_rate));
      return out;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW: {
      InstrId m = a.ema(in.slots.at(0), g, options.beta1);
      InstrId v = a.ema(in.slots.at(1), a.mul(g, g), options.beta2);
      // Bias corrections 1 - b^t with t = step + 1, as scalars.
      InstrId t = b.binary(Opcode::kAdd, in.step, b.scalar_constant(b.shape(in.step).dtype(), 1));
      auto correction = [&](double beta) {
        InstrId power = b.binary(Opcode::kPower, b.scalar_constant(b.shape(t).dtype(), beta), t);
        InstrId one_minus =
            b.binary(Opcode::kSubtract, b.scalar_constant(b.shape(t).dtype(), 1), power);
        InstrId typed = b.shape(t).dtype() == weight_shape.dtype()
                            ? one_minus
                            : b.convert(one_minus, weight_shape.dtype());
        return a.splat(typed, weight_shape);
      };
      InstrId m_hat = a.div(m, correction(options.beta1));
      InstrId v_hat = a.div(v, correction(options.beta2));
      InstrId denom = a.add(b.unary(Opcode::kSqrt, v_hat), a.c(v_hat, options.epsilon));
      InstrId direction = a.div(m_hat, denom);
      if (options.kind == OptimizerKind::kAdamW)
        direction = a.add(direction, a.scale(in.weight, options.weight_decay));
      out.new_weight = a.sub(in.weight, a.scale(direction, options.learning_rate));
      out.new_slots = {m, v};
      return out;
    }
    case OptimizerKind::kAdafactor: {
      size_t slot = 0;
      InstrId m_old = options.beta1 > 0 ? in.slots.at(slot++) : kNoId;
      InstrId g2 = a.add(a.mul(g, g), a.c(g, options.epsilon));
      InstrId v_hat;
      if (adafactor_factored(options, weight_shape)) {
        const int64_t r = weight_shape.rank();
        InstrId row = a.ema(in.slots.at(slot), a.mean(g2, r - 1), options.beta2);
        InstrId col = a.ema(in.slots.at(slot + 1), a.mean(g2, r - 2), options.beta2);
        InstrId row_mean = a.mean(row, r - 2);  // over the row statistics' last dim
        std::vector<int64_t> leading(static_cast<size_t>(r - 2));
        std::iota(leading.begin(), leading.end(), 0);
        std::vector<int64_t> row_dims = leading, col_dims = leading;
        row_dims.push_back(r - 2);
        col_dims.push_back(r - 1);
        InstrId normalised_row = a.div(row, b.broadcast(row_mean, b.shape(row).dims(), leading));
        v_hat = a.mul(a.expand(normalised_row, weight_shape, row_dims),
                      a.expand(col, weight_shape, col_dims));
        out.new_slots = {row, col};
      } else {
        v_hat = a.ema(in.slots.at(slot), g2, options.beta2);
        out.new_slots = {v_hat};
      }
      InstrId u = a.mul(g, b.unary(Opcode::kRsqrt, v_hat));
      if (options.clipping_threshold > 0) {
        // RMS(u) = sqrt(mean(u^2)); divide by max(1, RMS / d).
        double n = static_cast<double>(weight_shape.num_elements());
        InstrId mean_sq =
            b.binary(Opcode::kMultiply, training::reduce_sum_all(b, reducers, a.mul(u, u)),
                     b.scalar_constant(weight_shape.dtype(), 1.0 / n));
        InstrId ratio =
            b.binary(Opcode::kDivide, b.unary(Opcode::kSqrt, mean_sq),
                     b.scalar_constant(weight_shape.dtype(), options.clipping_threshold));
        InstrId divisor =
            b.binary(Opcode::kMaximum, ratio, b.scalar_constant(weight_shape.dtype(), 1));
        u = a.div(u, a.splat(divisor, weight_shape));
      }
      if (m_old != kNoId) {
        u = a.ema(m_old, u, options.beta1);
        out.new_slots.insert(out.new_slots.begin(), u);
      }
      out.new_weight = a.sub(in.weight, a.scale(u, options.learning_rate));
      return out;
    }
  }
  return out;
}

}  // namespace podsim::compiler
