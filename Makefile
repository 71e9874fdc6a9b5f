# gpulet: the two entry points of the README, and the pieces they are made of.
#   make demo   installs what is missing, builds, runs gpulet on a simulated DGX A100 node
#   make test   installs what is missing, builds, runs clang-tidy, every test, then again under ASan+UBSan,
#               then a short libFuzzer run of every parser
#   make image  the OCI image from Debian 12 packages (deploy/image/build.sh), tagged with the version
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 15
JOBS       ?= $(shell nproc)
PACKAGES   := $(shell grep -v '^\#' .ci/packages.txt)
# what `make image` needs: the build and the image tools, not the test toolchain
IMAGE_PACKAGES := $(shell grep -v '^\#' deploy/image/build-packages.txt)
FIXTURE    ?= dgx-a100

.PHONY: all deps build asan-build demo test tidy unit-test asan-test fuzz-test format-check format clean \
	image image-deps chart-files deploy-render

all: build

# install_missing(PACKAGES): apt-get install those of PACKAGES that are neither installed nor provided
define install_missing
	@provided=$$(dpkg-query -W -f '$${Provides}\n' | tr ',' '\n' | sed 's/^ *//; s/[ (].*//' | sort -u); \
	missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo "$$provided" | grep -qx "$$p" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(PACKAGES))

image-deps:
	$(call install_missing,$(IMAGE_PACKAGES))

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

asan-build:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGPULET_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

demo: deps build
	GPULET_BUILD=$(CURDIR)/$(BUILD) /usr/bin/python3 tests/demo.py

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
