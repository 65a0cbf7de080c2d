// Helpers for propagation tests: parse an HLO module, propagate, and read
// back one instruction's sharding in canonical form.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/hlo_parser.h"
#include "compiler/propagation/propagation.h"
#include "compiler/sharding/sharding.h"

namespace podsim::compiler::testing {

// An HLO module of `devices` partitions: an f32 %add computation (for
// reduce-like ops) and an ENTRY %e with `entry_body`.
inline std::string module(const std::string& entry_body, int devices = 4) {
  return "HloModule t, num_partitions=" + std::to_string(devices) +
         "\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] "
         "parameter(1)\n"
         "  ROOT %s = f32[] add(%a, %b)\n}\n\nENTRY %e {\n" +
         entry_body + "}\n";
}

inline Module propagate_text(const std::string& hlo, PropagationOptions options = {}) {
  Module m = parse_hlo(hlo, "test.hlo");
  propagate_shardings(m, options);
  return m;
}

// The canonical text of the sharding of `name` (the entry first, then the
// other computations in module order).
inline std::string sharding_of(const Module& m, const std::string& name) {
  std::vector<const Computation*> order{&m.entry()};
  for (const auto& c : m.computations())
    if (&c != &m.entry()) order.push_back(&c);
  for (const Computation* cp : order) {
    const Computation& c = *cp;
    InstrId id = c.find(name);
    if (id == kNoId) continue;
    const auto& s = c.instr(id).sharding;
    return s ? parse_sharding(*s).to_string() : "<none>";
  }
  ADD_FAILURE() << "no instruction named " << name;
  return "";
}

// Canonical form of an expected sharding text (so iota and explicit forms compare).
inline std::string canon(const std::string& text) { return parse_sharding(text).to_string(); }

}  // namespace podsim::compiler::testing
