// Maps HLO text attributes (XLA spelling) onto podsim's Attributes fields.
#include "compiler/hlo/hlo_attribute_reader.h"

#include <fmt/format.h>

#include "compiler/hlo/hlo_values.h"

namespace podsim::compiler::hlo_detail {

namespace {

bool read_bool(HloCursor& c) {
  if (c.consume_keyword("true")) return true;
  if (c.consume_keyword("false")) return false;
  c.fail_expected("'true' or 'false'");
}

NameRef read_computation_ref(HloCursor& c) {
  c.skip_space();
  size_t pos = c.pos();
  return NameRef{std::string(c.name("a computation name")), pos};
}

// Attributes whose values podsim neither models nor prints back.
bool is_skipped(std::string_view key) {
  return key == "operand_precision" || key == "precision_config" || key == "statistics" ||
         key == "schedule" || key == "result_accuracy";
}

// The op_name="..." entry of a metadata={...} value ("" when absent); the
// other entries (source_file, source_line, ...) are not modelled.
std::string op_name_of_metadata(std::string_view metadata) {
  constexpr std::string_view kKey = "op_name=\"";
  size_t at = metadata.find(kKey);
  if (at == std::string_view::npos) return "";
  std::string name;
  for (size_t i = at + kKey.size(); i < metadata.size() && metadata[i] != '"'; ++i) {
    if (metadata[i] == '\\' && i + 1 < metadata.size()) ++i;
    name += metadata[i];
  }
  return name;
}

// A tuple sharding as XLA prints it carries "/*index=5*/" comments between
// its elements: they are dropped from the kept text.
std::string without_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;  // the cursor has checked termination
      i = end + 1;
      continue;
    }
    out += text[i];
  }
  return out;
}

}  // namespace

void read_attribute(HloCursor& c, PendingInstruction& pending, std::string_view key) {
  Attributes& a = pending.instr.attrs;
  c.skip_space();
  size_t value_pos = c.pos();
  if (key == "sharding") {
    if (c.peek() != '{') c.fail_expected("'{' starting a sharding");
    pending.instr.sharding = without_comments(c.raw_value());
  } else if (key == "metadata") {
    if (c.peek() != '{') c.fail_expected("'{' starting metadata");
    pending.instr.op_name = op_name_of_metadata(c.raw_value());
  } else if (is_skipped(key)) {
    c.raw_value();
  } else if (key == "dimensions") {
    a.dimensions = read_int_list(c);
  } else if (key == "iota_dimension") {
    a.iota_dimension = c.integer("an integer dimension");
  } else if (key == "slice") {
    a.slice = read_slice(c);
  } else if (key == "padding") {
    a.padding = read_padding(c);
  } else if (key == "dynamic_slice_sizes") {
    a.dynamic_slice_sizes = read_int_list(c);
  } else if (key == "direction") {
    std::string dir(c.name("a comparison direction (EQ, NE, LT, LE, GT, GE)"));
    auto parsed = parse_comparison_direction(dir);
    if (!parsed)
      c.fail_at(value_pos, fmt::format("unknown comparison direction '{}'", dir),
                "directions: EQ, NE, LT, LE, GT, GE");
    a.comparison = *parsed;
  } else if (key == "type") {
    a.comparison_type = std::string(c.name("a comparison type"));
  } else if (key == "lhs_batch_dims") {
    a.dot.lhs_batch = read_int_list(c);
  } else if (key == "rhs_batch_dims") {
    a.dot.rhs_batch = read_int_list(c);
  } else if (key == "lhs_contracting_dims") {
    a.dot.lhs_contracting = read_int_list(c);
  } else if (key == "rhs_contracting_dims") {
    a.dot.rhs_contracting = read_int_list(c);
  } else if (key == "window") {
    a.window = read_window(c);
  } else if (key == "dim_labels") {
    a.conv = read_dim_labels(c);
  } else if (key == "feature_group_count") {
    a.feature_group_count = c.integer("an integer group count");
  } else if (key == "batch_group_count") {
    a.batch_group_count = c.integer("an integer group count");
  } else if (key == "offset_dims") {
    a.gather.offset_dims = read_int_list(c);
  } else if (key == "collapsed_slice_dims") {
    a.gather.collapsed_slice_dims = read_int_list(c);
  } else if (key == "start_index_map") {
    a.gather.start_index_map = read_int_list(c);
  } else if (key == "operand_batching_dims") {
    a.gather.operand_batching_dims = read_int_list(c);
  } else if (key == "start_indices_batching_dims") {
    a.gather.start_indices_batching_dims = read_int_list(c);
  } else if (key == "index_vector_dim") {
    // Shared by gather and scatter; the opcode decides which one is meaningful.
    a.gather.index_vector_dim = a.scatter.index_vector_dim = c.integer("an integer dimension");
  } else if (key == "slice_sizes") {
    a.gather_slice_sizes = read_int_list(c);
  } else if (key == "indices_are_sorted") {
    a.indices_are_sorted = read_bool(c);
  } else if (key == "update_window_dims") {
    a.scatter.update_window_dims = read_int_list(c);
  } else if (key == "inserted_window_dims") {
    a.scatter.inserted_window_dims = read_int_list(c);
  } else if (key == "scatter_dims_to_operand_dims") {
    a.scatter.scatter_dims_to_operand_dims = read_int_list(c);
  } else if (key == "input_batching_dims") {
    a.scatter.input_batching_dims = read_int_list(c);
  } else if (key == "scatter_indices_batching_dims") {
    a.scatter.scatter_indices_batching_dims = read_int_list(c);
  } else if (key == "unique_indices") {
    a.unique_indices = read_bool(c);
  } else if (key == "to_apply" || key == "calls") {
    pending.to_apply = read_computation_ref(c);
  } else if (key == "true_computation") {
    pending.true_computation = read_computation_ref(c);
  } else if (key == "false_computation") {
    pending.false_computation = read_computation_ref(c);
  } else if (key == "branch_computations") {
    c.expect('{');
    if (!c.consume('}')) {
      do {
        pending.branch_computations.push_back(read_computation_ref(c));
      } while (c.consume(','));
      c.expect('}');
    }
  } else if (key == "select") {
    pending.select = read_computation_ref(c);
  } else if (key == "scatter") {
    pending.scatter = read_computation_ref(c);
  } else if (key == "frontend_attributes") {
    if (c.peek() != '{') c.fail_expected("'{' starting frontend_attributes");
    a.frontend_attributes = std::string(c.raw_value());
  } else if (key == "is_stable") {
    a.is_stable = read_bool(c);
  } else if (key == "fft_type") {
    a.fft_type = std::string(c.name("an FFT type (FFT, IFFT, RFFT, IRFFT)"));
    if (a.fft_type != "FFT" && a.fft_type != "IFFT" && a.fft_type != "RFFT" &&
        a.fft_type != "IRFFT")
      c.fail_at(value_pos, fmt::format("unknown fft_type '{}'", a.fft_type),
                "fft types: FFT, IFFT, RFFT, IRFFT");
  } else if (key == "fft_length") {
    a.fft_length = read_int_list(c);
  } else if (key == "distribution") {
    a.rng_distribution = std::string(c.name("an rng distribution (rng_uniform, rng_normal)"));
    if (a.rng_distribution != "rng_uniform" && a.rng_distribution != "rng_normal")
      c.fail_at(value_pos, fmt::format("unknown rng distribution '{}'", a.rng_distribution),
                "distributions: rng_uniform, rng_normal");
  } else if (key == "algorithm") {
    a.rng_algorithm =
        std::string(c.name("an rng algorithm (rng_default, rng_three_fry, rng_philox)"));
  } else if (key == "exponent_bits") {
    a.exponent_bits = c.integer("an integer exponent bit count");
  } else if (key == "mantissa_bits") {
    a.mantissa_bits = c.integer("an integer mantissa bit count");
  } else if (key == "k") {
    a.k = c.integer("an integer k");
  } else if (key == "largest") {
    a.largest = read_bool(c);
  } else if (key == "kind") {
    a.fusion_kind = std::string(c.name("a fusion kind (kLoop, kInput, kOutput, kCustom)"));
  } else if (key == "left_side") {
    a.left_side = read_bool(c);
  } else if (key == "lower") {
    a.lower = read_bool(c);
  } else if (key == "unit_diagonal") {
    a.unit_diagonal = read_bool(c);
  } else if (key == "transpose_a") {
    a.transpose_a = std::string(c.name("a transpose_a value (NO_TRANSPOSE, TRANSPOSE, ADJOINT)"));
  } else if (key == "epsilon") {
    a.epsilon = c.number("a number epsilon");
  } else if (key == "feature_index") {
    a.feature_index = c.integer("an integer feature index");
  } else if (key == "is_host_transfer") {
    a.is_host_transfer = read_bool(c);
  } else if (key == "condition") {
    pending.condition = read_computation_ref(c);
  } else if (key == "body") {
    pending.body = read_computation_ref(c);
  } else if (key == "index") {
    a.tuple_index = c.integer("an integer tuple index");
  } else if (key == "replica_groups") {
    a.replica_groups = read_replica_groups(c);
  } else if (key == "source_target_pairs") {
    a.source_target_pairs = read_source_target_pairs(c);
  } else if (key == "channel_id") {
    a.channel_id = c.integer("an integer channel id");
  } else if (key == "use_global_device_ids") {
    a.use_global_device_ids = read_bool(c);
  } else if (key == "custom_call_target") {
    a.custom_call_target = c.quoted_string("a quoted custom-call target");
  } else if (key == "backend_config") {
    a.backend_config = std::string(c.raw_value());
  } else {
    a.extra.emplace_back(std::string(key), std::string(c.raw_value()));
  }
}

}  // namespace podsim::compiler::hlo_detail
