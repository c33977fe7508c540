# lasthop: build, demo and tests. Every target does its own setup from a fresh checkout:
# a virtualenv in .venv with pinned tools, and the native module built in release mode
# (incremental: it is rebuilt only when a Rust source, Cargo file or pyproject.toml changes).
#
#   make demo    build, then simulate experiments/demo.toml into results/demo
#   make test    Rust tests, no_std build, clippy, then the Python tests
#   make bench   build, then `lasthop bench`
#   make bench-sweep  build, then `lasthop bench --sweep` (process-pool speedup)
#   make build   the native module and the standalone live tools (.venv/bin/lasthop-live)

SHELL := /bin/bash
PYTHON ?= python3
CARGO ?= cargo
VENV := .venv
BIN := $(VENV)/bin

# Pinned-ish tool versions (maturin builds the wheel; pytest runs tests/python).
MATURIN_REQ := maturin>=1.9,<2
PYTEST_REQ := pytest>=8.3,<10
# An independent QUIC/HTTP/3 implementation the interoperability tests talk to.
AIOQUIC_REQ := aioquic>=1.2,<2
# flent reads `lasthop export --flent` files in the tests; the notebook test runs
# docs/notebooks/quickstart.ipynb in a Jupyter kernel.
FLENT_REQ := flent>=2.3,<3
NOTEBOOK_REQS := "nbclient>=0.10,<1" "nbformat>=5.9,<6" "ipykernel>=6.29,<8"
# Generative tests of the spec layer (tests/python/test_spec_hypothesis.py).
HYPOTHESIS_REQ := hypothesis>=6.100,<7
# Checks docs/spec.schema.json against the validator (tests/python/test_spec_schema.py).
JSONSCHEMA_REQ := jsonschema>=4.18,<5
# Runs the tests that need no quiet machine on every core (make test-python).
XDIST_REQ := pytest-xdist>=3.5,<4

RUST_SOURCES := Cargo.toml Cargo.lock \
	$(shell find crates -type f \( -name '*.rs' -o -name 'Cargo.toml' \) 2>/dev/null)

.PHONY: all build demo test test-rust test-nostd clippy test-python bench bench-sweep clean fuzz fuzz-build fuzz-smoke fuzz-py

all: build

# The virtualenv and the tools in it.
$(VENV)/.deps-stamp: Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$(MATURIN_REQ)" "$(PYTEST_REQ)" "$(AIOQUIC_REQ)" "$(FLENT_REQ)" $(NOTEBOOK_REQS) "$(HYPOTHESIS_REQ)" "$(JSONSCHEMA_REQ)" "$(XDIST_REQ)"
	touch $@

# The QUIC tool links quiche, which builds BoringSSL: cmake, g++ and libclang (bindgen).
# Installed with apt-get when this runs as root on Debian; otherwise one line says what to do.
# (libclang itself, not libclang-cpp, which clang's other packages bring without it.)
$(VENV)/.quic-deps-stamp: $(VENV)/.deps-stamp
	@missing=""; command -v cmake >/dev/null || missing="$$missing cmake"; \
	command -v g++ >/dev/null || missing="$$missing g++"; \
	ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/*/libclang-[0-9]*.so* \
	  /usr/lib/*/libclang.so* 2>/dev/null | grep -q . || missing="$$missing libclang-dev"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 \
	      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; } || exit 1; \
	  else echo "make: the QUIC tool needs:$$missing (sudo apt-get install$$missing)" >&2; exit 1; fi; \
	fi
	touch $@

# The extension module, built in release mode and installed into the venv (editable for the
# Python sources, so editing python/lasthop needs no rebuild). This also installs the
# `lasthop` console script into $(BIN).
#
# It is built profile-guided (PGO=0: a plain release build): instrumented first (into
# target/pgo-gen), then run on the training specs — every `lasthop new` template and
# experiments/*.toml without the emulator's (python/lasthop/bench/pgo.py) — then built again from
# the counts they left (target/pgo-use). llvm-profdata comes with rustup's llvm-tools component,
# added here if missing; without it the build is a plain one and says so. The results are the
# same byte for byte (the counts place and inline code; no arithmetic changes); `lasthop bench`
# names the build it timed.
PGO ?= 1
PGO_DIR := $(abspath target/pgo)
PGO_TRAIN := $(filter-out experiments/emu-%,$(wildcard experiments/*.toml))
MATURIN_DEVELOP := VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(BIN)):$$PATH \
	$(BIN)/maturin develop --release --quiet --extras ray

# Which of the two it was last built as: another PGO value rebuilds it.
PGO_MARK := $(VENV)/.native-pgo-$(PGO)
$(PGO_MARK): $(VENV)/.deps-stamp
	rm -f $(VENV)/.native-pgo-*
	touch $@

# With PGO=1, the shell lines that set `profdata` to rustup's llvm-profdata (adding the
# llvm-tools component if it is missing), or leave it empty: a plain build.
FIND_PROFDATA = profdata=""; \
	if [ "$(PGO)" = 1 ]; then \
	  bin="$$(rustc --print sysroot)/lib/rustlib/$$(rustc -vV | sed -n 's/^host: //p')/bin"; \
	  [ -x "$$bin/llvm-profdata" ] || timeout 300 rustup component add llvm-tools >/dev/null 2>&1 || true; \
	  if [ -x "$$bin/llvm-profdata" ]; then profdata="$$bin/llvm-profdata"; \
	  else echo "make: no llvm-profdata (rustup component add llvm-tools): a plain release build of $(1)"; fi; \
	fi

# $(call PGO_BUILD,WHAT,COUNTS,GEN_TARGET,USE_TARGET,BUILD,TRAIN_ARGS): the shell lines that build
# WHAT with the command BUILD, profile-guided when llvm-profdata is there (FIND_PROFDATA):
# instrumented into the target directory GEN_TARGET, `lasthop.bench.pgo TRAIN_ARGS` run on the
# training specs, the counts merged in COUNTS, built again from them into USE_TARGET; else plain
# (Cargo's own target directory). Each build keeps a target directory of its own, and so its
# flags: a rebuild redoes only what changed. `built` is left naming the directory built into.
PGO_BUILD = $(call FIND_PROFDATA,$(1)); \
	if [ -n "$$profdata" ]; then \
	  echo "make: $(1), profile-guided: instrumented, trained, built again (PGO=0: a plain build)"; \
	  rm -rf $(2) && mkdir -p $(2) && \
	  RUSTFLAGS="$$RUSTFLAGS -Cprofile-generate=$(2)/raw" CARGO_TARGET_DIR=$(3) $(5) && \
	  LLVM_PROFILE_FILE="$(2)/raw/%m_%p.profraw" $(BIN)/python -m lasthop.bench.pgo $(6) $(PGO_TRAIN) && \
	  "$$profdata" merge -o $(2)/merged.profdata $(2)/raw && \
	  LASTHOP_PGO=1 RUSTFLAGS="$$RUSTFLAGS -Cprofile-use=$(2)/merged.profdata" CARGO_TARGET_DIR=$(4) \
	    $(5) && built=$(4); \
	else $(5) && built=target; fi

$(VENV)/.native-stamp: $(VENV)/.deps-stamp $(PGO_MARK) $(RUST_SOURCES) pyproject.toml python/lasthop/bench/pgo.py
	@$(call PGO_BUILD,the native module,$(PGO_DIR),target/pgo-gen,target/pgo-use,$(MATURIN_DEVELOP),)
	touch $@

# The standalone live tools (no Python needed), put beside the `lasthop` command in the
# virtualenv. Profile-guided as the module is (PGO=0: target/release/lasthop-live, plain), from
# counts of its own: each training spec is run by the instrumented binary itself
# (`lasthop.bench.pgo --binary`), as the binary's build names its functions apart from the
# module's (other crates and features are linked), so the module's counts do not apply to it.
PGO_LIVE_DIR := $(abspath target/pgo-live)
LIVE_BUILD := $(CARGO) build --release --quiet -p lasthop-live --features quic --bin lasthop-live
$(BIN)/lasthop-live: $(VENV)/.quic-deps-stamp $(VENV)/.native-stamp $(RUST_SOURCES) python/lasthop/bench/pgo.py
	@$(call PGO_BUILD,the standalone tools,$(PGO_LIVE_DIR),target/pgo-live-gen,target/pgo-live-use,$(LIVE_BUILD),\
	  --binary target/pgo-live-gen/release/lasthop-live) && \
	install -m 755 $$built/release/lasthop-live $@

build: $(VENV)/.native-stamp $(BIN)/lasthop-live

# The main job on the built-in simulator: one cell in detail, then every reproduction suite
# (quick mode) with its HTML report; nothing is opened, the paths are printed.
demo: build
	$(BIN)/lasthop run experiments/demo.toml -o results/demo
	$(BIN)/lasthop reproduce all --quick -o results/reproduce-quick

bench: build
	$(BIN)/lasthop bench

# 24 runs of ~1 s wall each at -j 1 and -j 2: runs/s and the pool's speedup (not a test).
bench-sweep: build
	$(BIN)/lasthop bench --sweep

test: test-rust test-nostd clippy test-python

# lasthop-py is a Python extension (it cannot link standalone); it is tested from Python.
test-rust:
	$(CARGO) test --workspace --exclude lasthop-py

# lasthop-core and lasthop-algo are #![no_std]: building them without the `std` feature
# proves no std API crept in.
test-nostd:
	$(CARGO) build -p lasthop-core -p lasthop-algo

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# (The VM test runs the live tools' binary that test-rust built, target/debug/lasthop-live;
# the QUIC tests the release one with QUIC, .venv/bin/lasthop-live.)
# Two passes: every test that neither measures on the wall clock nor holds machine-wide
# resources, on all cores (pytest-xdist); then those (marked `serial` in
# tests/python/conftest.py) alone, so the emulator and the live tools have a quiet machine.
# Both passes run; either failing fails.
#
# The tests run on the native module as it was last built, profile-guided or plain (the same
# results byte for byte); a checkout with neither builds the plain one, which takes less than half
# the time (PGO=1 on the command line: the profile-guided one).
TEST_PGO := $(if $(filter command line environment,$(origin PGO)),$(PGO),$(if $(wildcard $(VENV)/.native-pgo-1),1,0))
test-python: $(VENV)/.quic-deps-stamp
	@$(MAKE) --no-print-directory PGO=$(TEST_PGO) $(VENV)/.native-stamp $(BIN)/lasthop-live
	@rc=0; \
	$(BIN)/python -m pytest -q -n auto -m "not serial" --durations=10 tests/python || rc=$$?; \
	$(BIN)/python -m pytest -q -m serial --durations=10 tests/python || rc=$$?; \
	exit $$rc

# Coverage-guided fuzzing (cargo-fuzz, libFuzzer; needs the nightly toolchain and
# `cargo install cargo-fuzz`). fuzz/ is its own workspace; targets in fuzz/fuzz_targets, seed
# corpora (kept small, in the repository) in fuzz/corpus/<target>. Runs write what they find to
# fuzz/work/<target> (not kept) and crashes to fuzz/artifacts/<target>. Built optimized with
# debug assertions and overflow checks (-O -a). `make test` replays fuzz/corpus/<target> and
# fuzz/regressions/<target> through the same target bodies (lasthop_live::fuzzing) on the stable
# toolchain: crates/lasthop-live/tests/fuzz_corpus.rs.
FUZZ_TARGETS := spec_run aggctl_wire netlink vwire_text emu_inject spec_toml
FUZZ_TIME ?= 600
FUZZ_SMOKE_RUNS ?= 2000
FUZZ_CARGO := cd fuzz && $(CARGO) +nightly fuzz
FUZZ_FLAGS := -O -a

fuzz-build:
	$(FUZZ_CARGO) build $(FUZZ_FLAGS)

# Longer campaigns: FUZZ_TIME seconds per target, one process (make fuzz FUZZ_TIME=3600).
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/work/$$t; \
	  echo "== $$t ($(FUZZ_TIME) s)"; \
	  ($(FUZZ_CARGO) run $(FUZZ_FLAGS) $$t work/$$t corpus/$$t -- -max_total_time=$(FUZZ_TIME) \
	    -timeout=20 -rss_limit_mb=2048 -print_final_stats=1) || exit 1; \
	done

# The Python readers' targets (atheris: libFuzzer for Python, from PyPI): fuzz/python/<target>.py,
# corpora in fuzz/corpus/<target>; `make test` replays them (tests/python/test_fuzz_corpus.py).
PY_FUZZ_TARGETS := result_readers
ATHERIS_REQ := atheris>=2.3,<4

fuzz-py: $(VENV)/.native-stamp
	$(BIN)/pip install -q "$(ATHERIS_REQ)"
	@for t in $(PY_FUZZ_TARGETS); do \
	  mkdir -p fuzz/work/$$t fuzz/artifacts/$$t; \
	  echo "== $$t ($(FUZZ_TIME) s)"; \
	  $(BIN)/python fuzz/python/$$t.py fuzz/work/$$t fuzz/corpus/$$t -max_total_time=$(FUZZ_TIME) \
	    -max_len=16384 -print_final_stats=1 -artifact_prefix=fuzz/artifacts/$$t/ || exit 1; \
	done

# A short run of each target: its seed corpus, then FUZZ_SMOKE_RUNS mutated inputs (new
# inputs go to a scratch directory, not to the kept corpus; the log of a failing run is shown).
fuzz-smoke: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf fuzz/work/smoke/$$t; mkdir -p fuzz/work/smoke/$$t; \
	  log=fuzz/work/smoke/$$t.log; \
	  if ($(FUZZ_CARGO) run $(FUZZ_FLAGS) $$t work/smoke/$$t corpus/$$t -- -runs=$(FUZZ_SMOKE_RUNS) \
	      -seed=1 -timeout=20 -rss_limit_mb=2048 -max_len=8192) > $$log 2>&1; then \
	    echo "$$t: $$(grep -E '^Done' $$log)"; \
	  else \
	    tail -40 $$log; echo "$$t: FAILED (log: $$log)"; exit 1; \
	  fi; \
	done

# Removes the virtualenv, the installed extension and demo output (not Cargo's target/).
clean:
	rm -rf $(VENV) results python/lasthop/_native*.so
