# gpulet: the two entry points of the README, and the pieces they are made of.
#   make demo   installs what the demo needs, builds gpulet and the fake NVML (quietly: the output is in
#               $(BUILD)/build.log), runs gpulet on a simulated DGX A100 node left in $(BUILD)/demo
#   make test   installs what is missing, builds, runs clang-tidy, every test, then again under ASan+UBSan,
#               then a short libFuzzer run of every parser
#   make image  the OCI image from Debian 12 packages (deploy/image/build.sh), tagged with the version
#   make cluster-demo  gpulet on a real single-node Kubernetes with fake GPUs, left up; make cluster-demo-down
#   make install  gpulet, gpulet-probe, gpulet-cdi-hook, the serving modules and the upstream program
#               names under $(DESTDIR)$(PREFIX) (docs/HACKING.md section 7, "Installing")
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 15
JOBS       ?= $(shell nproc)
PACKAGES   := $(shell grep -v '^\#' .ci/packages.txt)
# what `make image` needs: the build and the image tools, not the test toolchain
IMAGE_PACKAGES := $(shell grep -v '^\#' deploy/image/build-packages.txt)
FIXTURE    ?= dgx-a100
# what `make demo` needs: the build and the kubelet stand-in, not the test toolchain
DEMO_PACKAGES := $(shell grep -v '^\#' .ci/demo-packages.txt)
DEMO_DIR   ?= $(BUILD)/demo
PREFIX     ?= /usr/local

.PHONY: all deps demo-deps build asan-build demo cluster-demo cluster-demo-down install test tidy unit-test asan-test fuzz-test format-check format clean \
	image image-deps chart-files deploy-render

all: build

# install_missing(PACKAGES): apt-get install those of PACKAGES that are neither installed nor provided,
# the output in $(BUILD)/apt.log (its last lines printed when apt-get fails)
define install_missing
	@provided=$$(dpkg-query -W -f '$${Provides}\n' | tr ',' '\n' | sed 's/^ *//; s/[ (].*//' | sort -u); \
	missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo "$$provided" | grep -qx "$$p" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		mkdir -p $(BUILD); log=$(BUILD)/apt.log; echo "Installing" $$missing "(output in $$log) ..."; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; } \
			>$$log 2>&1 || { tail -n 30 $$log; echo "make: apt-get failed; its whole output is in $$log"; exit 1; }; \
	fi
endef

# quiet_build(TARGETS): build TARGETS in $(BUILD) (configured first when it is new), the output in
# $(BUILD)/build.log; its last lines are printed only when the build fails
define quiet_build
	@mkdir -p $(BUILD); log=$(BUILD)/build.log; \
	{ { [ -f $(BUILD)/CMakeCache.txt ] || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo; } && \
	  cmake --build $(BUILD) -j$(JOBS) --target $(1); } \
		>$$log 2>&1 || { tail -n 30 $$log; echo "make: the build failed; its whole output is in $$log"; exit 1; }
endef

deps:
	$(call install_missing,$(PACKAGES))

demo-deps:
	$(call install_missing,$(DEMO_PACKAGES))

image-deps:
	$(call install_missing,$(IMAGE_PACKAGES))

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

asan-build:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGPULET_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# The demo builds what it runs: gpulet (with gpulet-probe, gpulet-cdi-hook and the serving modules), the
# fake NVML and the kubelet stand-in's Python messages; not the tests and benchmarks.
demo: demo-deps
	@echo "Building gpulet and the fake NVML in $(BUILD) (output in $(BUILD)/build.log) ..."
	$(call quiet_build,gpulet fakenvml plugin_pyproto)
	@GPULET_BUILD=$(CURDIR)/$(BUILD) /usr/bin/python3 tests/demo.py --dir $(DEMO_DIR)

# The real single-node Kubernetes of tests/k8s with gpulet on it, left running in $(BUILD)/cluster-demo;
# the peers are built once into ~/.cache/gpulet-peers (tests/k8s/peers.py). cluster-demo-down stops it.
cluster-demo: deps
	@echo "Building gpulet and the fake NVML in $(BUILD) (output in $(BUILD)/build.log) ..."
	$(call quiet_build,gpulet fakenvml)
	@GPULET_BUILD=$(CURDIR)/$(BUILD) /usr/bin/python3 tests/cluster_demo.py up --dir $(BUILD)/cluster-demo

cluster-demo-down:
	@GPULET_BUILD=$(CURDIR)/$(BUILD) /usr/bin/python3 tests/cluster_demo.py down --dir $(BUILD)/cluster-demo

install:
	$(call quiet_build,gpulet)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

unit-test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

asan-test: asan-build
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j$(JOBS) -LE no-asan

# A short libFuzzer run of every parser of outside input (clang, ASan+UBSan), from the committed seeds.
fuzz-test:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULET_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_all
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BUILD)

format-check:
	@bad=$$(git ls-files '*.c' '*.h' | grep -v '^tests/fuzz/corpus' | xargs clang-format --dry-run 2>&1 | grep -c warning || true); \
	if [ "$$bad" != "0" ]; then git ls-files '*.c' '*.h' | xargs clang-format --dry-run 2>&1 | head -40; \
		echo "clang-format: $$bad places differ; run 'make format'"; exit 1; fi; echo "clang-format: clean"

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

# clang-tidy over src/ at zero findings: the static analyzer and the bugprone checks (.clang-tidy says
# which are off and why), from $(BUILD)/compile_commands.json; about 3-4 minutes on 2 cores.
tidy: build
	/usr/bin/python3 tests/tidy/run.py -j$(JOBS) $(BUILD)

test: deps format-check tidy unit-test asan-test fuzz-test

# The image: a minimal Debian 12 root (mmdebstrap, cached in $(BUILD)/image) holding the libraries
# gpulet loads, plus gpulet and its command-name links; prints the tag and size. IMAGE=registry/name
# to tag it for your registry.
image: image-deps build
	sh deploy/image/build.sh $(BUILD)

# The Helm chart carries copies of the alert rules and the dashboard (test_helm.py checks they match).
chart-files:
	/usr/bin/python3 tests/integration/helm_lib.py chart-files

# deploy/kustomize/base/gpulet.yaml rendered from the chart (real helm, fetched into $(BUILD)/k8stools)
deploy-render: chart-files
	GPULET_BUILD=$(CURDIR)/$(BUILD) /usr/bin/python3 tests/integration/helm_lib.py render-base

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
