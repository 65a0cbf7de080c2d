// libFuzzer target: the HLO text parser. Any input either parses
// or raises podsim::UserError; a parsed module prints to text that parses
// again to the same text (print(parse(x)) is a fixed point). Anything else —
// another exception, a crash, a sanitizer report, a hang — is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "common/error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string printed;
  try {
    printed = podsim::compiler::print_hlo(podsim::compiler::parse_hlo(text, "fuzz.hlo"));
  } catch (const podsim::UserError&) {
    return 0;
  }
  // The printer's output must parse (a UserError here is a finding too).
  try {
    const std::string again =
        podsim::compiler::print_hlo(podsim::compiler::parse_hlo(printed, "printed.hlo"));
    if (again == printed) return 0;
    std::fprintf(stderr, "print(parse(x)) is not a fixed point:\n%s\n---\n%s\n", printed.c_str(),
                 again.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "printed module does not parse: %s\n%s\n", e.what(), printed.c_str());
  }
  std::abort();
}
