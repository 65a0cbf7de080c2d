# The two README commands. Everything else is plain CMake under build/.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
DEMO_WORKLOAD ?= workloads/examples/transformer_layer_2d.hlo

.PHONY: demo test deps configure build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/cli/podsim partition $(DEMO_WORKLOAD) --verify
	$(BUILD_DIR)/cli/podsim hardware show tpuv3

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
