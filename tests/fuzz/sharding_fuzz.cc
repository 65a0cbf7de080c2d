// libFuzzer target: the XLA sharding text parser. Any input parses
// or raises podsim::UserError; a parsed sharding prints to text that parses
// back to an equal sharding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "compiler/sharding/sharding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  podsim::compiler::Sharding sharding;
  try {
    sharding = podsim::compiler::parse_sharding(text);
  } catch (const podsim::UserError&) {
    return 0;
  }
  if (podsim::compiler::parse_sharding(sharding.to_string()) != sharding) std::abort();
  return 0;
}
