# gpuwatch - convenience targets around CMake. See README.md.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_CLANG ?= build-clang
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc)
DATA       ?= ./data
LISTEN     ?= 127.0.0.1:9201

.PHONY: all deps build test test-unit test-asan test-tsan test-asan-tree test-tsan-tree build-clang-release-tree test-powercut soak test-replay-week build-clang-release build-matrix check-includes long-functions fuzz fuzz-seeds run bench bench-query evaluate evaluate-variations clean

all: build

deps:
	bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Everything CI runs: the include layering check, the function-length
# check, unit + integration tests
# (a missing peer program fails its test: GW_ALLOW_SKIP=0), the clang
# Release build with its unit tests, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer.
# The three extra trees are compiled at nice 19 while the main tests run
# (the integration tests spend most of their time waiting on peers, so the
# compilers get the idle CPU and the tests keep theirs); their unit tests
# run afterwards (scripts/test-all.sh).
test: deps check-includes long-functions build
	JOBS=$(JOBS) BUILD=$(BUILD) BUILD_CLANG=$(BUILD_CLANG) BUILD_ASAN=$(BUILD_ASAN) BUILD_TSAN=$(BUILD_TSAN) \
		bash scripts/test-all.sh

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -L unit

# Users build Release too, and clang and -O3 find what -O2 gcc does not:
# the whole tree (library, CLI, tests, bench tools) with clang -O3, then its
# unit tests (~25 s).
build-clang-release: build-clang-release-tree
	cd $(BUILD_CLANG) && ctest --output-on-failure -L unit -j $(JOBS)

build-clang-release-tree:
	cmake -S . -B $(BUILD_CLANG) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_CLANG) -j $(JOBS)

# The six builds users make (gcc and clang x Debug, RelWithDebInfo, Release),
# whole tree, -Werror; no tests. Not part of `make test` (about 12 min on 2
# cores): run it before a release and after touching warnings-prone code.
build-matrix:
	set -e; for cc in gcc clang; do for bt in Debug RelWithDebInfo Release; do \
		cmake -S . -B build-matrix/$$cc-$$bt -DCMAKE_C_COMPILER=$$cc -DCMAKE_BUILD_TYPE=$$bt >/dev/null; \
		cmake --build build-matrix/$$cc-$$bt -j $(JOBS) >build-matrix/$$cc-$$bt.log 2>&1 \
			|| { echo "$$cc $$bt: build failed, see build-matrix/$$cc-$$bt.log"; exit 1; }; \
		echo "$$cc $$bt: clean"; done; done

# No source includes a header of a higher layer, another module's private
# header (*_int.h) or a library another module owns (docs/architecture.md).
# Every CMake build runs it too.
check-includes:
	bash scripts/check-includes.sh

# No hand-written function in src/ over 150 lines, outside the allow-list in
# the script (scripts/long-functions.sh -a lists every function by length).
long-functions:
	bash scripts/long-functions.sh

test-asan: test-asan-tree
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -L unit -j $(JOBS)

test-asan-tree:
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DGW_SANITIZE=ON -DGW_BUILD_BENCH=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)

# ThreadSanitizer finds races, so the unit tests of single-threaded code
# (the detector evaluation, the simulator's generator, the PromQL parser and
# the corpus replays; ~2 of its 3 minutes) are left to the other builds.
TSAN_SKIP = ^(unit_eval|unit_sim_gen|unit_promql_parse|unit_fuzz_replay_.*)$$
test-tsan: test-tsan-tree
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L unit -E '$(TSAN_SKIP)' -j $(JOBS)

test-tsan-tree:
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DGW_BUILD_BENCH=OFF \
		-DCMAKE_C_FLAGS="-fsanitize=thread -O1" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread"
	cmake --build $(BUILD_TSAN) -j $(JOBS)

# Every libFuzzer target of tests/fuzz/ for FUZZ_SECONDS each (default 60),
# one after another, from its seeds in tests/corpus/<target>/, under
# AddressSanitizer + UndefinedBehaviorSanitizer (clang; docs/fuzzing.md).
# New inputs and crashes go to /dev/shm/gpuwatch-fuzz (FUZZ_WORK); fails
# when a target crashed, hung or leaked. `make test` replays the corpora.
$(BUILD_FUZZ)/CMakeCache.txt:
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON -DGW_BUILD_TESTS=OFF -DGW_BUILD_BENCH=OFF

fuzz: $(BUILD_FUZZ)/CMakeCache.txt
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	bash tests/fuzz/run.sh $(BUILD_FUZZ) $(FUZZ_SECONDS)

# Rewrites the binary seeds (tests/corpus/*/seed-*.bin) with the encoders.
fuzz-seeds: $(BUILD_FUZZ)/CMakeCache.txt
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_make_seeds
	$(BUILD_FUZZ)/fuzz_make_seeds tests/corpus

# The same simulated week sent through serve five times in different random
# shardings must give byte-identical ALERTS samples (the default test run
# does one day three times).
test-replay-week: build
	GW_IT_REPLAY_DAYS=7 GW_IT_REPLAY_RUNS=5 bash tests/integration/it_alerts_replay.sh $(BUILD)

# 200 simulated power cuts (tests/integration/it_powercut.sh; the default
# test run does 12), every other one tearing unsynced writes page by page,
# with more data so startup checkpoints truncate the WAL (~20 min).
test-powercut: build
	GW_POWERCUT_CUTS=200 GW_POWERCUT_TORN=$${GW_POWERCUT_TORN:-1} GW_POWERCUT_NODES=2 GW_POWERCUT_HOURS=8 \
		bash tests/integration/it_powercut.sh $(BUILD)

# The soak: 30 min (SOAK_MINUTES) at ten times the reference cluster's write
# rate with dashboard queries and a graceful restart in the middle; memory
# must stay flat and every write and query succeed (bench/run_soak.sh).
# SOAK_OUT=FILE.md keeps the figures.
soak: build
	bash bench/run_soak.sh --build $(BUILD) $(if $(SOAK_OUT),--out $(SOAK_OUT))

# The main job: gpuwatch serving a local data dir, fed by a simulated
# 16-node GPU cluster with failures (and by a local Prometheus that scrapes
# node_exporter, when installed); prints the status page's URL.
run: deps build
	bash scripts/run-demo.sh $(BUILD) $(DATA) $(LISTEN)

bench: deps build
	bash bench/run_ingest_bench.sh --build $(BUILD)

bench-query: deps build
	bash bench/run_query_bench.sh --build $(BUILD)

# The detectors scored against the simulator's ground truth (3 x 55 days, ~10 min on 2 cores).
evaluate: deps build
	$(BUILD)/gpuwatch evaluate --profile paper --seeds 1,2,3

# The detectors on variation families (label styles, intervals, cluster
# sizes, GPU models, doubled baits, shuffled arrival), 3 seeds each.
evaluate-variations: deps build
	$(BUILD)/gpuwatch evaluate --variations --seeds 1,2,3

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_CLANG)
