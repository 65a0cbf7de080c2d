# The two README commands. Everything else is plain CMake under build/.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
DEMO_WORKLOAD ?= workloads/examples/transformer_layer_2d.hlo
DEMO_RUN ?= workloads/dense_1t_2048.yaml

FUZZ_SECONDS ?= 60
FUZZ_DIR ?= build-fuzz
ASAN_DIR ?= build-asan

.PHONY: demo test deps configure build sanitize fuzz readme format

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo needs the podsim binary and, for `import podsim`, the Python
# module (one more translation unit over the same libraries): about half the
# translation units of the whole tree, and none of the test binaries.
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target podsim _podsim
	$(BUILD_DIR)/cli/podsim run $(DEMO_RUN)
	$(BUILD_DIR)/cli/podsim partition $(DEMO_WORKLOAD) --verify
	$(BUILD_DIR)/cli/podsim hardware show tpuv3

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Regenerates README.md's sample outputs from their commands (the test that
# compares them, run in update mode), the what-if and multi-slice studies' plots and the Python
# what-if's plot (scripts/python_what_if.py through `import podsim`).
readme: build
	@bash scripts/install-deps.sh gnuplot-nox
	PODSIM_UPDATE_README=1 $(BUILD_DIR)/tests/test_cli --gtest_filter='ReadmeSamples.*'
	@mkdir -p docs/img
	$(BUILD_DIR)/cli/podsim sweep sweeps/what_if_128b.yaml -j $(JOBS) -o $(BUILD_DIR)/what_if_128b.csv \
	  --plot docs/img/what_if_128b.svg --plot-metric step_time_s --plot-metric mfu
	$(BUILD_DIR)/cli/podsim sweep sweeps/slices_16b_v5e.yaml -j $(JOBS) -o $(BUILD_DIR)/slices_16b_v5e.csv \
	  --plot docs/img/slices_16b_v5e.svg --plot-metric step_time_s --plot-metric mfu
	PYTHONPATH=$(BUILD_DIR)/python MPLBACKEND=Agg /usr/bin/python3 scripts/python_what_if.py docs/img/python_what_if.svg

# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# At most 2 jobs for the build and for ctest (an ASan compile takes 1-2 GB
# and the machines are shared); -O1 -g1 is ASan's recommended level, with
# line tables for the reports. UBSan's runtime halt_on_error makes every
# finding fail its test, and the podsim children the CLI tests start inherit
# the same options. Each test keeps the TIMEOUT of tests/CMakeLists.txt.
SANITIZE_JOBS ?= $(shell n=$$(nproc); [ $$n -gt 2 ] && n=2; echo $$n)
SANITIZE_FLAGS = -O1 -g1 -DNDEBUG
sanitize: deps
	@cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPODSIM_SANITIZE=ON -DPODSIM_BUILD_BENCH=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(SANITIZE_FLAGS)" >/dev/null
	@cmake --build $(ASAN_DIR) -j $(SANITIZE_JOBS)
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --output-on-failure -j $(SANITIZE_JOBS)

# libFuzzer targets (HLO parser, sharding parser, workload loader), each run
# for FUZZ_SECONDS on a scratch corpus seeded from the repo's own files.
fuzz:
	@bash scripts/install-deps.sh clang libclang-rt-14-dev
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPODSIM_FUZZ=ON \
	  -DPODSIM_BUILD_TESTS=OFF -DPODSIM_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target hlo_parser_fuzz sharding_fuzz workload_fuzz
	@bash scripts/run-fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

# Applies .clang-format to every C++ file (Debian package clang-format).
format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i
