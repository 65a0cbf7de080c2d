// HLO text printer: appends everything to one std::string (no temporaries
// per element beyond small number formatting) so 100k-instruction modules
// print in linear time.
#include "compiler/hlo/hlo_printer.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace podsim::compiler {

namespace {

class Printer {
 public:
  explicit Printer(const Module& module) : module_(module) {}

  std::string module_text() {
    out_.reserve(256);
    out_ += "HloModule ";
    out_ += module_.name();
    if (module_.replica_count() != 1)
      fmt::format_to(std::back_inserter(out_), ", replica_count={}", module_.replica_count());
    if (module_.num_partitions() != 1)
      fmt::format_to(std::back_inserter(out_), ", num_partitions={}", module_.num_partitions());
    if (module_.is_scheduled()) out_ += ", is_scheduled=true";
    auto flags = [this](const char* key, const std::vector<bool>& values) {
      if (values.empty()) return;
      out_ += fmt::format(", {}={{", key);
      for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out_ += ',';
        out_ += values[i] ? "true" : "false";
      }
      out_ += "}";
    };
    flags("allow_spmd_sharding_propagation_to_parameters", module_.propagation_to_parameters());
    flags("allow_spmd_sharding_propagation_to_output", module_.propagation_to_output());
    if (!module_.frontend_attributes().empty())
      out_ += ", frontend_attributes=" + module_.frontend_attributes();
    out_ += "\n";
    for (CompId id : computation_order()) {
      out_ += "\n";
      append_computation(id);
    }
    return std::move(out_);
  }

  std::string instruction_text(const Computation& comp, InstrId id) {
    append_instruction(comp, id);
    return std::move(out_);
  }

 private:
  // Post-order over called computations, in module order, entry last: every
  // callee is printed before its callers. Reprinting a module parsed from
  // this order yields the same order.
  std::vector<CompId> computation_order() const {
    const int n = module_.computation_count();
    std::vector<uint8_t> state(static_cast<size_t>(n), 0);
    std::vector<CompId> order;
    std::vector<std::pair<CompId, size_t>> stack;
    stack.reserve(static_cast<size_t>(n) +
                  1);  // each computation is pushed once: references stay valid
    auto visit = [&](CompId root) {
      if (state[static_cast<size_t>(root)]) return;
      state[static_cast<size_t>(root)] = 1;
      stack.emplace_back(root, 0);
      while (!stack.empty()) {
        auto& [comp, next_instr] = stack.back();
        const Computation& c = module_.computation(comp);
        bool descended = false;
        while (next_instr < c.instructions().size() && !descended) {
          for (CompId callee : c.instructions()[next_instr].called) {
            if (callee >= 0 && callee < n && !state[static_cast<size_t>(callee)]) {
              state[static_cast<size_t>(callee)] = 1;
              stack.emplace_back(callee, 0);  // no reallocation (reserved)
              descended = true;
              break;
            }
          }
          if (!descended) ++next_instr;
        }
        if (!descended) {
          order.push_back(stack.back().first);
          stack.pop_back();
        }
      }
    };
    for (CompId i = 0; i < n; ++i)
      if (i != module_.entry_id()) visit(i);
    if (module_.entry_id() >= 0 && module_.entry_id() < n) {
      // The entry is only ever reached last, unless something calls it.
      if (!state[static_cast<size_t>(module_.entry_id())]) visit(module_.entry_id());
    }
    return order;
  }

  void append_computation(CompId id) {
    const Computation& comp = module_.computation(id);
    if (id == module_.entry_id()) out_ += "ENTRY ";
    out_ += '%';
    out_ += comp.name();
    out_ += " (";
    bool first = true;
    for (InstrId p : comp.parameters()) {
      if (!first) out_ += ", ";
      first = false;
      out_ += comp.instr(p).name;
      out_ += ": ";
      out_ += comp.instr(p).shape.to_string();
    }
    out_ += ") -> ";
    if (comp.root() >= 0 && comp.root() < comp.size()) out_ += comp.root_instr().shape.to_string();
    out_ += " {\n";
    for (InstrId i = 0; i < comp.size(); ++i) {
      out_ += i == comp.root() ? "  ROOT " : "  ";
      append_instruction(comp, i);
      out_ += '\n';
    }
    out_ += "}\n";
  }

  void append_ints(const std::vector<int64_t>& values, char separator = ',') {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out_ += separator;
      fmt::format_to(std::back_inserter(out_), "{}", values[i]);
    }
  }
  void append_int_list(std::string_view key, const std::vector<int64_t>& values) {
    out_ += ", ";
    out_ += key;
    out_ += "={";
    append_ints(values);
    out_ += '}';
  }
  void append_int(std::string_view key, int64_t value) {
    fmt::format_to(std::back_inserter(out_), ", {}={}", key, value);
  }
  void append_true(std::string_view key, bool value) {
    if (!value) return;
    out_ += ", ";
    out_ += key;
    out_ += "=true";
  }

  void append_element(DType dtype, double v) {
    if (dtype == DType::kPred) {
      out_ += v != 0.0 ? "true" : "false";
    } else if (is_integral(dtype)) {
      fmt::format_to(std::back_inserter(out_), "{}", static_cast<int64_t>(v));
    } else if (std::isnan(v)) {
      out_ += "nan";
    } else if (std::isinf(v)) {
      out_ += v > 0 ? "inf" : "-inf";
    } else if (dtype == DType::kF64) {
      fmt::format_to(std::back_inserter(out_), "{}", v);
    } else {  // f32/bf16/f16 values are exact floats: shortest float text
      fmt::format_to(std::back_inserter(out_), "{}", static_cast<float>(v));
    }
  }

  void append_array_values(const Literal& lit, int dim, size_t& offset) {
    const Shape& s = lit.shape();
    if (dim == s.rank()) {
      if (is_complex(s.dtype())) {  // XLA: "(re, im)"
        const DType part = s.dtype() == DType::kC64 ? DType::kF32 : DType::kF64;
        out_ += '(';
        append_element(part, lit.values()[offset++]);
        out_ += ", ";
        append_element(part, lit.values()[offset++]);
        out_ += ')';
        return;
      }
      append_element(s.dtype(), lit.values()[offset++]);
      return;
    }
    bool inner = dim + 1 == s.rank();
    out_ += inner || s.rank() == 1 ? "{" : "{ ";
    for (int64_t i = 0; i < s.dim(dim); ++i) {
      if (i) out_ += ", ";
      append_array_values(lit, dim + 1, offset);
    }
    out_ += inner || s.rank() == 1 ? "}" : " }";
  }

  void append_literal(const Literal& lit) {
    if (lit.is_tuple()) {
      out_ += '(';
      for (size_t i = 0; i < lit.elements().size(); ++i) {
        if (i) out_ += ", ";
        append_literal(lit.elements()[i]);
      }
      out_ += ')';
      return;
    }
    size_t offset = 0;
    if (lit.shape().rank() > 0 && lit.shape().num_elements() == 0) {
      out_ += "{}";
      return;
    }
    append_array_values(lit, 0, offset);
  }

  void append_window(const std::vector<WindowDim>& window) {
    auto any = [&](auto pred) {
      for (const auto& d : window)
        if (pred(d)) return true;
      return false;
    };
    auto field = [&](std::string_view key, auto get) {
      out_ += ' ';
      out_ += key;
      out_ += '=';
      for (size_t i = 0; i < window.size(); ++i) {
        if (i) out_ += 'x';
        fmt::format_to(std::back_inserter(out_), "{}", get(window[i]));
      }
    };
    out_ += ", window={size=";
    for (size_t i = 0; i < window.size(); ++i) {
      if (i) out_ += 'x';
      fmt::format_to(std::back_inserter(out_), "{}", window[i].size);
    }
    if (any([](const WindowDim& d) { return d.stride != 1; }))
      field("stride", [](const WindowDim& d) { return d.stride; });
    if (any([](const WindowDim& d) { return d.pad_low != 0 || d.pad_high != 0; })) {
      out_ += " pad=";
      for (size_t i = 0; i < window.size(); ++i) {
        if (i) out_ += 'x';
        fmt::format_to(std::back_inserter(out_), "{}_{}", window[i].pad_low, window[i].pad_high);
      }
    }
    if (any([](const WindowDim& d) { return d.base_dilation != 1; }))
      field("lhs_dilate", [](const WindowDim& d) { return d.base_dilation; });
    if (any([](const WindowDim& d) { return d.window_dilation != 1; }))
      field("rhs_dilate", [](const WindowDim& d) { return d.window_dilation; });
    if (any([](const WindowDim& d) { return d.reversal; }))
      field("rhs_reversal", [](const WindowDim& d) { return d.reversal ? 1 : 0; });
    out_ += '}';
  }

  // One side of dim labels: letters at their dims, spatial dim k as digit k.
  void append_labels(int64_t rank, int64_t first, char first_char, int64_t second, char second_char,
                     const std::vector<int64_t>& spatial) {
    std::string labels(static_cast<size_t>(rank), '?');
    if (first >= 0 && first < rank) labels[static_cast<size_t>(first)] = first_char;
    if (second >= 0 && second < rank) labels[static_cast<size_t>(second)] = second_char;
    for (size_t k = 0; k < spatial.size(); ++k)
      if (spatial[k] >= 0 && spatial[k] < rank)
        labels[static_cast<size_t>(spatial[k])] = static_cast<char>('0' + k);
    out_ += labels;
  }

  void append_dim_labels(const ConvDims& d) {
    const int64_t rank = static_cast<int64_t>(d.input_spatial.size()) + 2;
    out_ += ", dim_labels=";
    append_labels(rank, d.input_batch, 'b', d.input_feature, 'f', d.input_spatial);
    out_ += '_';
    append_labels(rank, d.kernel_input_feature, 'i', d.kernel_output_feature, 'o',
                  d.kernel_spatial);
    out_ += "->";
    append_labels(rank, d.output_batch, 'b', d.output_feature, 'f', d.output_spatial);
  }

  void append_replica_groups(const ReplicaGroups& g) {
    out_ += ", replica_groups=";
    if (g.iota) {
      fmt::format_to(std::back_inserter(out_), "[{},{}]<=[", g.iota->num_groups,
                     g.iota->group_size);
      append_ints(g.iota->reshape_dims);
      out_ += ']';
      if (!g.iota->transpose_perm.empty()) {
        out_ += "T(";
        append_ints(g.iota->transpose_perm);
        out_ += ')';
      }
      return;
    }
    out_ += '{';
    for (size_t i = 0; i < g.explicit_groups.size(); ++i) {
      if (i) out_ += ',';
      out_ += '{';
      append_ints(g.explicit_groups[i]);
      out_ += '}';
    }
    out_ += '}';
  }

  std::string_view computation_name(CompId id) const {
    return id >= 0 && id < module_.computation_count()
               ? std::string_view(module_.computation(id).name())
               : std::string_view("<invalid>");
  }

  void append_called(std::string_view key, CompId id) {
    out_ += ", ";
    out_ += key;
    out_ += "=%";
    out_ += computation_name(id);
  }

  // The op whose attributes a start op carries: all-gather-start prints as
  // an all-gather, XLA's short form "all-to-all-start" as an all-to-all.
  // Done and update ops carry none of the wrapped op's attributes.
  static Opcode attribute_opcode(const Instruction& in) {
    if (in.opcode == Opcode::kAsyncStart && in.attrs.async_wrapped) return *in.attrs.async_wrapped;
    if (in.opcode == Opcode::kAllGatherStart || in.opcode == Opcode::kAllReduceStart ||
        in.opcode == Opcode::kCollectivePermuteStart)
      return *async_wrapped_opcode(in.opcode);
    return in.opcode;
  }

  void append_verbatim(std::string_view key, const std::string& value) {
    if (value.empty()) return;
    out_ += ", ";
    out_ += key;
    out_ += '=';
    out_ += value;
  }

  void append_called_computations(const Instruction& in, const Computation& comp) {
    const Opcode op = in.opcode;
    if (op == Opcode::kWhile && in.called.size() == 2) {
      append_called("condition", in.called[0]);
      append_called("body", in.called[1]);
    } else if (op == Opcode::kConditional) {
      // The pred form (two branches selected by a pred) or the index form.
      const bool pred_form = in.called.size() == 2 && !in.operands.empty() && in.operands[0] >= 0 &&
                             in.operands[0] < comp.size() &&
                             comp.instr(in.operands[0]).shape.is_array() &&
                             comp.instr(in.operands[0]).shape.dtype() == DType::kPred;
      if (pred_form) {
        append_called("true_computation", in.called[0]);
        append_called("false_computation", in.called[1]);
      } else {
        out_ += ", branch_computations={";
        for (size_t i = 0; i < in.called.size(); ++i) {
          if (i) out_ += ", ";
          out_ += '%';
          out_ += computation_name(in.called[i]);
        }
        out_ += '}';
      }
    } else if (op == Opcode::kSelectAndScatter && in.called.size() == 2) {
      append_called("select", in.called[0]);
      append_called("scatter", in.called[1]);
    } else if (!in.called.empty()) {
      const bool calls =
          op == Opcode::kFusion ||
          ((op == Opcode::kAsyncStart || op == Opcode::kAsyncUpdate || op == Opcode::kAsyncDone) &&
           !in.attrs.async_wrapped);
      append_called(calls ? "calls" : "to_apply", in.called[0]);
    }
  }

  void append_attributes(const Instruction& in, const Computation& comp) {
    const Attributes& a = in.attrs;
    const Opcode op = attribute_opcode(in);
    const bool always_dimensions = op == Opcode::kBroadcast || op == Opcode::kTranspose ||
                                   op == Opcode::kReduce || op == Opcode::kReverse ||
                                   op == Opcode::kConcatenate || op == Opcode::kAllGather ||
                                   op == Opcode::kReduceScatter;
    if (a.channel_id && !is_collective(op))
      append_int("channel_id", *a.channel_id);  // send/recv, ...
    if (is_collective(op)) {
      if (a.channel_id) append_int("channel_id", *a.channel_id);
      if (op == Opcode::kCollectivePermute) {
        out_ += ", source_target_pairs={";
        for (size_t i = 0; i < a.source_target_pairs.size(); ++i) {
          if (i) out_ += ',';
          fmt::format_to(std::back_inserter(out_), "{{{},{}}}", a.source_target_pairs[i].first,
                         a.source_target_pairs[i].second);
        }
        out_ += '}';
      } else {
        append_replica_groups(a.replica_groups);
      }
    }
    if (always_dimensions || !a.dimensions.empty()) append_int_list("dimensions", a.dimensions);
    if (is_collective(op)) append_true("use_global_device_ids", a.use_global_device_ids);
    switch (op) {
      case Opcode::kIota:
        append_int("iota_dimension", a.iota_dimension);
        break;
      case Opcode::kSlice:
        out_ += ", slice={";
        for (size_t i = 0; i < a.slice.size(); ++i) {
          if (i) out_ += ", ";
          fmt::format_to(std::back_inserter(out_), "[{}:{}", a.slice[i].start, a.slice[i].limit);
          if (a.slice[i].stride != 1)
            fmt::format_to(std::back_inserter(out_), ":{}", a.slice[i].stride);
          out_ += ']';
        }
        out_ += '}';
        break;
      case Opcode::kPad: {
        bool interior = false;
        for (const auto& d : a.padding) interior |= d.interior != 0;
        out_ += ", padding=";
        for (size_t i = 0; i < a.padding.size(); ++i) {
          if (i) out_ += 'x';
          fmt::format_to(std::back_inserter(out_), "{}_{}", a.padding[i].low, a.padding[i].high);
          if (interior) fmt::format_to(std::back_inserter(out_), "_{}", a.padding[i].interior);
        }
        break;
      }
      case Opcode::kDynamicSlice:
        append_int_list("dynamic_slice_sizes", a.dynamic_slice_sizes);
        break;
      case Opcode::kCompare:
        out_ += ", direction=";
        out_ += comparison_direction_name(a.comparison);
        if (!a.comparison_type.empty()) {
          out_ += ", type=";
          out_ += a.comparison_type;
        }
        break;
      case Opcode::kDot:
        if (!a.dot.lhs_batch.empty()) append_int_list("lhs_batch_dims", a.dot.lhs_batch);
        append_int_list("lhs_contracting_dims", a.dot.lhs_contracting);
        if (!a.dot.rhs_batch.empty()) append_int_list("rhs_batch_dims", a.dot.rhs_batch);
        append_int_list("rhs_contracting_dims", a.dot.rhs_contracting);
        break;
      case Opcode::kReduceWindow:
      case Opcode::kSelectAndScatter:
        if (!a.window.empty()) append_window(a.window);
        break;
      case Opcode::kConvolution:
        if (!a.window.empty()) append_window(a.window);
        append_dim_labels(a.conv);
        if (a.feature_group_count != 1) append_int("feature_group_count", a.feature_group_count);
        if (a.batch_group_count != 1) append_int("batch_group_count", a.batch_group_count);
        break;
      case Opcode::kGather:
        append_int_list("offset_dims", a.gather.offset_dims);
        append_int_list("collapsed_slice_dims", a.gather.collapsed_slice_dims);
        append_int_list("start_index_map", a.gather.start_index_map);
        if (!a.gather.operand_batching_dims.empty())
          append_int_list("operand_batching_dims", a.gather.operand_batching_dims);
        if (!a.gather.start_indices_batching_dims.empty())
          append_int_list("start_indices_batching_dims", a.gather.start_indices_batching_dims);
        append_int("index_vector_dim", a.gather.index_vector_dim);
        append_int_list("slice_sizes", a.gather_slice_sizes);
        append_true("indices_are_sorted", a.indices_are_sorted);
        break;
      case Opcode::kScatter:
        append_int_list("update_window_dims", a.scatter.update_window_dims);
        append_int_list("inserted_window_dims", a.scatter.inserted_window_dims);
        append_int_list("scatter_dims_to_operand_dims", a.scatter.scatter_dims_to_operand_dims);
        if (!a.scatter.input_batching_dims.empty())
          append_int_list("input_batching_dims", a.scatter.input_batching_dims);
        if (!a.scatter.scatter_indices_batching_dims.empty())
          append_int_list("scatter_indices_batching_dims", a.scatter.scatter_indices_batching_dims);
        append_int("index_vector_dim", a.scatter.index_vector_dim);
        append_true("indices_are_sorted", a.indices_are_sorted);
        append_true("unique_indices", a.unique_indices);
        break;
      case Opcode::kGetTupleElement:
        append_int("index", a.tuple_index);
        break;
      case Opcode::kCustomCall:
        out_ += ", custom_call_target=\"";
        for (char ch : a.custom_call_target) {
          if (ch == '"' || ch == '\\') out_ += '\\';
          out_ += ch;
        }
        out_ += '"';
        break;
      case Opcode::kSort:
        append_true("is_stable", a.is_stable);
        break;
      case Opcode::kFft:
        append_verbatim("fft_type", a.fft_type);
        append_int_list("fft_length", a.fft_length);
        break;
      case Opcode::kRng:
        append_verbatim("distribution", a.rng_distribution);
        break;
      case Opcode::kRngBitGenerator:
        append_verbatim("algorithm", a.rng_algorithm);
        break;
      case Opcode::kReducePrecision:
        append_int("exponent_bits", a.exponent_bits);
        append_int("mantissa_bits", a.mantissa_bits);
        break;
      case Opcode::kTopK:
        append_int("k", a.k);
        out_ += a.largest ? ", largest=true" : ", largest=false";
        break;
      case Opcode::kFusion:
        append_verbatim("kind", a.fusion_kind);
        break;
      case Opcode::kCholesky:
        append_true("lower", a.lower);
        break;
      case Opcode::kTriangularSolve:
        append_true("left_side", a.left_side);
        append_true("lower", a.lower);
        append_true("unit_diagonal", a.unit_diagonal);
        append_verbatim("transpose_a", a.transpose_a);
        break;
      case Opcode::kBatchNormTraining:
      case Opcode::kBatchNormInference:
      case Opcode::kBatchNormGrad:
        fmt::format_to(std::back_inserter(out_), ", epsilon={}", a.epsilon);
        append_int("feature_index", a.feature_index);
        break;
      case Opcode::kSend:
      case Opcode::kSendDone:
      case Opcode::kRecv:
      case Opcode::kRecvDone:
        append_true("is_host_transfer", a.is_host_transfer);
        break;
      default:
        break;
    }
    append_called_computations(in, comp);
    if (!a.backend_config.empty()) {
      out_ += ", backend_config=";
      out_ += a.backend_config;
    }
    if (in.sharding) {
      out_ += ", sharding=";
      out_ += *in.sharding;
    }
    append_verbatim("frontend_attributes", a.frontend_attributes);
    if (!in.op_name.empty()) {
      out_ += ", metadata={op_name=\"";
      for (char ch : in.op_name) {
        if (ch == '"' || ch == '\\') out_ += '\\';
        out_ += ch;
      }
      out_ += "\"}";
    }
    for (const auto& [key, value] : a.extra) {
      out_ += ", ";
      out_ += key;
      out_ += '=';
      out_ += value;
    }
  }

  void append_instruction(const Computation& comp, InstrId id) {
    const Instruction& in = comp.instr(id);
    out_ += '%';
    out_ += in.name;
    out_ += " = ";
    out_ += in.shape.to_string();
    out_ += ' ';
    if (in.attrs.async_wrapped &&
        (in.opcode == Opcode::kAsyncStart || in.opcode == Opcode::kAsyncUpdate ||
         in.opcode == Opcode::kAsyncDone)) {
      // XLA's short async form: "all-to-all-start", "call-update", "call-done".
      out_ += opcode_name(*in.attrs.async_wrapped);
      out_ += in.opcode == Opcode::kAsyncStart    ? "-start"
              : in.opcode == Opcode::kAsyncUpdate ? "-update"
                                                  : "-done";
    } else {
      out_ += opcode_name(in.opcode);
    }
    out_ += '(';
    if (in.opcode == Opcode::kParameter) {
      fmt::format_to(std::back_inserter(out_), "{}", in.attrs.parameter_number);
    } else if (in.opcode == Opcode::kConstant && in.attrs.literal) {
      append_literal(*in.attrs.literal);
    } else {
      for (size_t i = 0; i < in.operands.size(); ++i) {
        if (i) out_ += ", ";
        out_ += '%';
        InstrId op = in.operands[i];
        out_ += op >= 0 && op < comp.size() ? std::string_view(comp.instr(op).name)
                                            : std::string_view("<invalid>");
      }
    }
    out_ += ')';
    append_attributes(in, comp);
  }

  const Module& module_;
  std::string out_;
};

}  // namespace

std::string print_hlo(const Module& module) { return Printer(module).module_text(); }

std::string print_instruction(const Module& module, const Computation& computation, InstrId id) {
  return Printer(module).instruction_text(computation, id);
}

}  // namespace podsim::compiler
