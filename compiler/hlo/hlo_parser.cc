// HLO text parser: module header, computations, instructions; then name
// resolution (operands, called computations) and topological ordering.
#include "compiler/hlo/hlo_parser.h"

#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "common/did_you_mean.h"
#include "common/files.h"
#include "compiler/hlo/hlo_attribute_reader.h"
#include "compiler/hlo/hlo_cursor.h"
#include "compiler/hlo/hlo_values.h"
#include "compiler/ir/shape_inference.h"

namespace podsim::compiler {

namespace {

using hlo_detail::HloCursor;
using hlo_detail::NameRef;
using hlo_detail::PendingInstruction;

struct PendingComputation {
  std::string name;
  size_t name_pos = 0;
  bool is_entry = false;
  // The signature "(p: shape, ...) -> shape", if written.
  std::optional<std::vector<Shape>> signature_parameters;
  Shape signature_result;
  size_t signature_pos = 0;
  std::vector<PendingInstruction> instructions;
};

// Opcodes whose result shape follows from operands, attributes and called
// computations alone: an instruction may leave it out. The others (parameter,
// constant, iota, broadcast, reshape, convert, custom-call, ...) carry their
// result shape as an input.
bool may_omit_shape(Opcode op) {
  if (is_elementwise_binary(op)) return true;
  if (is_elementwise_unary(op)) return op != Opcode::kConvert;
  switch (op) {
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kSelect:
    case Opcode::kClamp:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kPad:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kGather:
    case Opcode::kScatter:
    case Opcode::kWhile:
    case Opcode::kCall:
    case Opcode::kConditional:
    case Opcode::kMap:
    case Opcode::kSort:
    case Opcode::kTopK:
    case Opcode::kSelectAndScatter:
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kOptimizationBarrier:
    case Opcode::kGetDimensionSize:
    case Opcode::kCholesky:
    case Opcode::kTriangularSolve:
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return true;
    default:
      return false;
  }
}

constexpr const char* kOpcodeHint =
    "podsim reads the op subset listed in compiler/ir/opcode.h (XLA spellings, e.g. 'exponential', "
    "'get-tuple-element')";

// kOpcodeHint, led by the nearest opcode when the name looks misspelt.
std::string opcode_hint(const std::string& text) {
  std::vector<std::string> names;
  for (int i = 0; i < opcode_count(); ++i) names.emplace_back(opcode_name(static_cast<Opcode>(i)));
  const std::string guess = closest(text, names);
  return guess.empty() ? std::string(kOpcodeHint)
                       : fmt::format("did you mean '{}'? {}", guess, kOpcodeHint);
}

class Parser {
 public:
  Parser(std::string_view text, std::string file) : c_(text, std::move(file)) {}

  Module parse() {
    Module module = read_header();
    std::vector<PendingComputation> computations;
    while (!c_.at_end()) computations.push_back(read_computation());
    if (computations.empty()) c_.fail_expected("a computation");
    assemble(module, computations);
    return module;
  }

 private:
  Module read_header() {
    if (c_.at_end()) c_.fail_expected("'HloModule'", "the input is empty");
    if (!c_.consume_keyword("HloModule")) c_.fail_expected("'HloModule'");
    Module module(std::string(c_.name("a module name")));
    while (c_.consume(',')) {
      std::string key(c_.name("a module attribute name"));
      c_.expect('=');
      c_.skip_space();
      size_t value_pos = c_.pos();
      if (key == "num_partitions" || key == "replica_count") {
        int64_t n = c_.integer("an integer");
        if (n < 1) c_.fail_at(value_pos, fmt::format("{} must be at least 1, got {}", key, n));
        if (key == "num_partitions")
          module.set_num_partitions(n);
        else
          module.set_replica_count(n);
      } else if (key == "is_scheduled") {
        module.set_is_scheduled(c_.raw_value() == "true");
      } else if (key == "allow_spmd_sharding_propagation_to_parameters" ||
                 key == "allow_spmd_sharding_propagation_to_output") {
        std::vector<bool> flags;
        c_.expect('{');
        if (!c_.consume('}')) {
          do {
            const std::string word(c_.name("true or false"));
            if (word != "true" && word != "false")
              c_.fail_at(value_pos, "expected true or false in " + key);
            flags.push_back(word == "true");
          } while (c_.consume(','));
          c_.expect('}');
        }
        if (key.ends_with("parameters"))
          module.set_propagation_to_parameters(std::move(flags));
        else
          module.set_propagation_to_output(std::move(flags));
      } else if (key == "frontend_attributes") {
        if (c_.peek() != '{') c_.fail_expected("'{' starting frontend_attributes");
        module.set_frontend_attributes(std::string(c_.raw_value()));
      } else {
        c_.raw_value();  // entry_computation_layout, frontend_attributes, ...: not modelled
      }
    }
    return module;
  }

  // A computation signature; checked against the parameter instructions and
  // the root once the computation is built.
  void read_signature(PendingComputation& comp) {
    comp.signature_pos = c_.pos();
    c_.expect('(');
    std::vector<Shape> parameters;
    if (!c_.consume(')')) {
      do {
        c_.name("a parameter name");
        c_.expect(':');
        parameters.push_back(hlo_detail::read_shape(c_));
      } while (c_.consume(','));
      c_.expect(')');
    }
    c_.expect_text("->");
    comp.signature_result = hlo_detail::read_shape(c_);
    comp.signature_parameters = std::move(parameters);
  }

  // Shapes compare without layouts.
  void check_signature(const PendingComputation& pending, const Computation& comp) {
    // Parameter numbers must be exactly 0..n-1, with or without a signature.
    const std::vector<InstrId> numbered = comp.parameters();
    for (size_t i = 0; i < numbered.size(); ++i) {
      const Instruction& p = comp.instr(numbered[i]);
      if (p.attrs.parameter_number != static_cast<int64_t>(i))
        throw UserError(p.location,
                        p.attrs.parameter_number < static_cast<int64_t>(i)
                            ? fmt::format("computation '{}' has parameter({}) twice", comp.name(),
                                          p.attrs.parameter_number)
                            : fmt::format("computation '{}' has parameter({}) but no parameter({})",
                                          comp.name(), p.attrs.parameter_number, i),
                        fmt::format("number the {} parameters 0 to {}, each once", numbered.size(),
                                    numbered.size() - 1));
    }
    if (!pending.signature_parameters) return;
    const auto& expected = *pending.signature_parameters;
    std::vector<InstrId> params = comp.parameters();
    if (params.size() != expected.size())
      c_.fail_at(pending.signature_pos,
                 fmt::format("computation '{}' declares {} parameters but has {}", comp.name(),
                             expected.size(), params.size()));
    for (size_t i = 0; i < params.size(); ++i) {
      const Instruction& p = comp.instr(params[i]);
      if (p.attrs.parameter_number != static_cast<int64_t>(i))
        c_.fail_at(pending.signature_pos,
                   fmt::format("computation '{}' has no parameter({})", comp.name(), i));
      // A declared parameter shape that differs from the parameter
      // instruction's is accepted, as XLA's parser does (XLA's own tests
      // write "(arg_tuple.1: ())" over a bf16 array parameter): the
      // instruction's shape is the one the computation uses.
    }
    if (!(comp.root_instr().shape == pending.signature_result))
      c_.fail_at(pending.signature_pos,
                 fmt::format("computation '{}' declares result {} but its root '{}' is {}",
                             comp.name(), pending.signature_result.to_string(false),
                             comp.root_instr().name, comp.root_instr().shape.to_string(false)));
  }

  PendingComputation read_computation() {
    PendingComputation comp;
    comp.is_entry = c_.consume_keyword("ENTRY");
    c_.skip_space();
    comp.name_pos = c_.pos();
    comp.name = std::string(
        c_.name(comp.is_entry ? "a computation name" : "a computation ('ENTRY' or a name)"));
    if (c_.peek() == '(') read_signature(comp);
    while (c_.consume(',')) {  // e.g. execution_thread="main"
      c_.name("a computation attribute name");
      c_.expect('=');
      c_.raw_value();
    }
    c_.expect('{');
    while (!c_.consume('}')) {
      if (c_.at_end()) c_.fail_expected(fmt::format("'}}' closing computation '{}'", comp.name));
      comp.instructions.push_back(read_instruction());
    }
    while (c_.consume(',')) {  // "}, execution_thread="main"": not modelled
      c_.name("a computation attribute name");
      c_.expect('=');
      c_.raw_value();
    }
    return comp;
  }

  void read_operands(PendingInstruction& p) {
    c_.expect('(');
    if (c_.consume(')')) return;
    do {
      if (hlo_detail::at_shape(c_)) hlo_detail::read_shape(c_);  // old-style "f32[8]{0} %x"
      c_.skip_space();
      size_t pos = c_.pos();
      p.operand_names.push_back(NameRef{std::string(c_.name("an operand name")), pos});
    } while (c_.consume(','));
    c_.expect(')');
  }

  PendingInstruction read_instruction() {
    PendingInstruction p;
    p.is_root = c_.consume_keyword("ROOT");
    c_.skip_space();
    p.name_pos = c_.pos();
    p.instr.name = std::string(c_.name("an instruction name"));
    p.instr.location = c_.location(p.name_pos);
    c_.expect('=');
    // The result shape may be left out where XLA infers it ("t = tuple(a, b)").
    p.has_shape = hlo_detail::at_shape(c_);
    if (p.has_shape) p.instr.shape = hlo_detail::read_shape(c_);
    c_.skip_space();
    size_t opcode_pos = c_.pos();
    std::string opcode_text(c_.name("an opcode"));
    auto opcode = parse_opcode(opcode_text);
    if (!opcode) {
      // XLA's short async form: "<op>-start" / "<op>-update" / "<op>-done"
      // for an op without its own async opcodes (all-to-all-start, call-done).
      for (auto [suffix, async_op] :
           {std::pair<std::string_view, Opcode>{"-start", Opcode::kAsyncStart},
            {"-update", Opcode::kAsyncUpdate},
            {"-done", Opcode::kAsyncDone}}) {
        std::string_view text = opcode_text;
        if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix)
          continue;
        auto wrapped = parse_opcode(text.substr(0, text.size() - suffix.size()));
        if (!wrapped) break;
        opcode = async_op;
        p.instr.attrs.async_wrapped = *wrapped;
        break;
      }
    }
    if (!opcode)
      c_.fail_at(opcode_pos, fmt::format("unknown opcode '{}'", opcode_text),
                 opcode_hint(opcode_text));
    p.instr.opcode = *opcode;
    if (!p.has_shape && !may_omit_shape(*opcode))
      c_.fail_at(opcode_pos, fmt::format("'{}' needs its result shape written", opcode_text),
                 "write the shape before the opcode, e.g. 'x = f32[8] " + opcode_text + "(...)'");
    if (*opcode == Opcode::kParameter) {
      c_.expect('(');
      p.instr.attrs.parameter_number = c_.integer("a parameter number");
      c_.expect(')');
    } else if (*opcode == Opcode::kConstant) {
      c_.expect('(');
      // Old-style "constant(f32[] 1)"; a '(' here opens a tuple literal, not a shape.
      if (c_.peek() != '(' && hlo_detail::at_shape(c_)) hlo_detail::read_shape(c_);
      p.instr.attrs.literal = hlo_detail::read_literal(c_, p.instr.shape);
      c_.expect(')');
    } else {
      read_operands(p);
    }
    while (c_.consume(',')) {
      std::string key(c_.name("an attribute name"));
      c_.expect('=');
      hlo_detail::read_attribute(c_, p, key);
    }
    return p;
  }

  // Resolves operand names and returns the instructions in topological order
  // (operands first, otherwise source order); a cycle is a UserError.
  Computation build_computation(PendingComputation& comp, std::vector<InstrId>& shapeless) {
    const size_t n = comp.instructions.size();
    std::unordered_map<std::string_view, int32_t> index_of;
    index_of.reserve(n * 2);
    int32_t root = kNoId;
    for (size_t i = 0; i < n; ++i) {
      const auto& p = comp.instructions[i];
      if (!index_of.emplace(p.instr.name, static_cast<int32_t>(i)).second)
        c_.fail_at(p.name_pos,
                   fmt::format("duplicate instruction name '{}' in computation '{}'", p.instr.name,
                               comp.name),
                   "instruction names must be unique within a computation");
      if (p.is_root) {
        if (root != kNoId)
          c_.fail_at(p.name_pos, fmt::format("computation '{}' has a second ROOT", comp.name));
        root = static_cast<int32_t>(i);
      }
    }
    if (n == 0)
      c_.fail_at(comp.name_pos, fmt::format("computation '{}' has no instructions", comp.name));
    if (root == kNoId) root = static_cast<int32_t>(n - 1);  // XLA: the last instruction is the root

    std::vector<std::vector<int32_t>> source_operands(n);
    for (size_t i = 0; i < n; ++i) {
      for (const NameRef& ref : comp.instructions[i].operand_names) {
        auto it = index_of.find(ref.name);
        if (it == index_of.end())
          c_.fail_at(ref.pos, fmt::format("undefined operand '{}' in computation '{}'", ref.name,
                                          comp.name));
        source_operands[i].push_back(it->second);
      }
    }

    // Iterative depth-first post-order: state 0 unvisited, 1 on the stack, 2 placed.
    std::vector<uint8_t> state(n, 0);
    std::vector<int32_t> new_id(n, kNoId);
    std::vector<int32_t> order;
    order.reserve(n);
    std::vector<std::pair<int32_t, size_t>> stack;
    for (size_t start = 0; start < n; ++start) {
      if (state[start] != 0) continue;
      stack.emplace_back(static_cast<int32_t>(start), 0);
      state[start] = 1;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        const auto& ops = source_operands[static_cast<size_t>(node)];
        if (next < ops.size()) {
          int32_t op = ops[next++];
          if (state[static_cast<size_t>(op)] == 1) {
            const auto& on_cycle = comp.instructions[static_cast<size_t>(op)];
            c_.fail_at(
                on_cycle.name_pos,
                fmt::format("cyclic graph: instruction '{}' in computation '{}' depends on itself",
                            on_cycle.instr.name, comp.name),
                "an instruction's operands must not (transitively) use it");
          }
          if (state[static_cast<size_t>(op)] == 0) {
            state[static_cast<size_t>(op)] = 1;
            stack.emplace_back(op, 0);
          }
        } else {
          state[static_cast<size_t>(node)] = 2;
          new_id[static_cast<size_t>(node)] = static_cast<int32_t>(order.size());
          order.push_back(node);
          stack.pop_back();
        }
      }
    }

    Computation out(comp.name);
    out.mutable_instructions().reserve(n);
    for (int32_t old : order) {
      if (!comp.instructions[static_cast<size_t>(old)].has_shape)
        shapeless.push_back(static_cast<InstrId>(out.size()));
      Instruction instr = std::move(comp.instructions[static_cast<size_t>(old)].instr);
      for (int32_t op : source_operands[static_cast<size_t>(old)])
        instr.operands.push_back(new_id[static_cast<size_t>(op)]);
      out.append(std::move(instr));
    }
    out.set_root(new_id[static_cast<size_t>(root)]);
    return out;
  }

  CompId resolve_computation(const std::unordered_map<std::string_view, CompId>& ids,
                             const NameRef& ref) {
    auto it = ids.find(ref.name);
    if (it == ids.end()) c_.fail_at(ref.pos, fmt::format("undefined computation '{}'", ref.name));
    return it->second;
  }

  // Called computations in the order module.h documents.
  std::vector<CompId> resolve_called(const std::unordered_map<std::string_view, CompId>& ids,
                                     const PendingInstruction& p) {
    std::vector<CompId> called;
    if (p.instr.opcode == Opcode::kWhile) {
      if (!p.condition || !p.body)
        c_.fail_at(p.name_pos,
                   fmt::format("while '{}' needs both condition= and body=", p.instr.name));
      called.push_back(resolve_computation(ids, *p.condition));
      called.push_back(resolve_computation(ids, *p.body));
    } else if (p.instr.opcode == Opcode::kConditional) {
      if (p.true_computation || p.false_computation) {
        if (!p.true_computation || !p.false_computation || !p.branch_computations.empty())
          c_.fail_at(
              p.name_pos,
              fmt::format("conditional '{}' needs both true_computation= and false_computation= "
                          "(or branch_computations= alone)",
                          p.instr.name));
        called.push_back(resolve_computation(ids, *p.true_computation));
        called.push_back(resolve_computation(ids, *p.false_computation));
      } else {
        if (p.branch_computations.empty())
          c_.fail_at(p.name_pos,
                     fmt::format("conditional '{}' needs branch_computations={{...}} or "
                                 "true_computation= and false_computation=",
                                 p.instr.name));
        for (const NameRef& ref : p.branch_computations)
          called.push_back(resolve_computation(ids, ref));
      }
    } else if (p.instr.opcode == Opcode::kSelectAndScatter) {
      if (!p.select || !p.scatter)
        c_.fail_at(
            p.name_pos,
            fmt::format("select-and-scatter '{}' needs both select= and scatter=", p.instr.name));
      called.push_back(resolve_computation(ids, *p.select));
      called.push_back(resolve_computation(ids, *p.scatter));
    } else if (p.to_apply) {
      called.push_back(resolve_computation(ids, *p.to_apply));
    }
    return called;
  }

  void assemble(Module& module, std::vector<PendingComputation>& computations) {
    std::unordered_map<std::string_view, CompId> ids;
    CompId entry = kNoId;
    for (size_t i = 0; i < computations.size(); ++i) {
      const auto& comp = computations[i];
      if (!ids.emplace(comp.name, static_cast<CompId>(i)).second)
        c_.fail_at(comp.name_pos, fmt::format("duplicate computation name '{}'", comp.name));
      if (comp.is_entry) {
        if (entry != kNoId) c_.fail_at(comp.name_pos, "a second ENTRY computation");
        entry = static_cast<CompId>(i);
      }
    }
    if (entry == kNoId) entry = static_cast<CompId>(computations.size() - 1);
    // Called computations are resolved before building, as building moves the
    // pending instructions (and their names) away.
    std::vector<std::vector<std::vector<CompId>>> called(computations.size());
    for (size_t i = 0; i < computations.size(); ++i)
      for (auto& p : computations[i].instructions) called[i].push_back(resolve_called(ids, p));
    for (size_t i = 0; i < computations.size(); ++i)
      for (size_t k = 0; k < computations[i].instructions.size(); ++k)
        computations[i].instructions[k].instr.called = std::move(called[i][k]);
    std::vector<std::vector<InstrId>> shapeless(computations.size());
    for (size_t i = 0; i < computations.size(); ++i)
      module.add_computation(build_computation(computations[i], shapeless[i]));
    module.set_entry(entry);
    // Shapes left out are inferred callees first (a call's shape is its
    // callee's root shape), each computation in its topological order.
    std::vector<uint8_t> state(computations.size(), 0);
    for (size_t i = 0; i < computations.size(); ++i)
      infer_missing_shapes(module, static_cast<CompId>(i), shapeless, state);
    for (size_t i = 0; i < computations.size(); ++i)
      check_signature(computations[i], module.computation(static_cast<CompId>(i)));
  }

  void infer_missing_shapes(Module& module, CompId id,
                            const std::vector<std::vector<InstrId>>& shapeless,
                            std::vector<uint8_t>& state) {
    if (state[static_cast<size_t>(id)] != 0)
      return;  // done, or on the call stack (a recursive call)
    state[static_cast<size_t>(id)] = 1;
    for (InstrId instr_id : shapeless[static_cast<size_t>(id)])
      for (CompId callee : module.computation(id).instr(instr_id).called)
        infer_missing_shapes(module, callee, shapeless, state);
    Computation& comp = module.mutable_computation(id);
    const ShapeInferenceContext context{&module, module.num_partitions()};
    for (InstrId instr_id : shapeless[static_cast<size_t>(id)]) {
      const Instruction& instr = comp.instr(instr_id);
      std::vector<const Shape*> operand_shapes;
      for (InstrId op : instr.operands) operand_shapes.push_back(&comp.instr(op).shape);
      Shape inferred = infer_shape(instr, operand_shapes, context);
      comp.mutable_instr(instr_id).shape = std::move(inferred);
    }
    state[static_cast<size_t>(id)] = 2;
  }

  HloCursor c_;
};

}  // namespace

Module parse_hlo(std::string_view text, std::string file_name) {
  return Parser(text, std::move(file_name)).parse();
}

Module parse_hlo_file(const std::string& path) {
  return parse_hlo(read_file_text(path, "HLO file"), path);
}

}  // namespace podsim::compiler
