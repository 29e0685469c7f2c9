# Developer tasks for topic. Every output goes under dist/.
# Narrow any target with RUN, BENCH, PKG, COUNT or TIME (-benchtime), e.g.
#   make race RUN=TestCancelIsIdempotent COUNT=5
#   make flame BENCH=BenchmarkPublishParallel
# make expands a $ in a variable it is given: write $$ for a regexp's end,
#   make regress REV=HEAD BENCH='PublishDirect$$|PublishRetained'

export GOTOOLCHAIN ?= go1.27.3
SHELL := bash
.SHELLFLAGS := -o pipefail -c

GO       ?= go
TOOL      = bash $(CURDIR)/scripts/tool
PPROF     = $(TOOL) github.com/google/pprof -symbolize=demangle=none $(PPROF_$(PROF))
PPROF_mem = -sample_index=alloc_space
DIST      = dist
# Module folders, each tested in its own folder. Found by their go.mod;
# tools/ only pins tools. Override to list them, e.g. MODULES=". natsbridge".
ifndef MODULES
MODULES  := $(sort $(patsubst ./%,%,$(patsubst %/,%,$(dir $(shell find . -name go.mod -not -path './tools/*' -not -path './$(DIST)/*' -not -path '*/testdata/*')))))
endif
PKG      ?= ./...
# The packages of every module, named from the root (the workspace holds them).
WORKPKGS  = ./... $(foreach m,$(filter-out .,$(MODULES)),./$(m)/...)
# The comparison harness, whose dependencies are the peers it measures:
# building them under the race detector and analysing them with staticcheck
# cost make check two minutes. make compare-smoke vets and tests it and runs
# its whole pipeline; race, smoke and staticcheck take the other modules
# (LIBMODULES), and make staticcheck-compare analyses it.
HARNESS    = compare
LIBMODULES = $(filter-out $(HARNESS),$(MODULES))
# topicvet's analyzers share no state between the packages they analyse:
# make vet-topics runs its tests, from the build of topicvet, where the
# race detector would add a minute of compiling golang.org/x/tools to a
# cold make race.
ANALYZERS  = topicvet
RACEMODULES = $(filter-out $(ANALYZERS),$(LIBMODULES))
RACEPKGS   = ./... $(foreach m,$(filter-out .,$(RACEMODULES)),./$(m)/...)
RUN      ?= .
BENCH    ?= .
COUNT    ?=
TIME     ?=
LATENCY_TIME ?=
FUZZTIME ?= 10s
FUZZMIN  ?= 1s
FUZZ     ?= FuzzBrokerMatchesReference FuzzLogMatchesReference
COVERMIN ?= 95
CORE      = github.com/seedaa7df82c/topic
# The code the coverage counts: the core and its mechanisms under internal/.
COVERPKG ?= $(CORE),$(CORE)/internal/ring,$(CORE)/internal/queue
RACECOUNT ?= -count=1
ROUNDS   ?= 10
BENCHDOC_COUNT = $(or $(COUNT),5)
BENCHDOC_TIME  = $(or $(TIME),300ms)
BENCHDOC_LATENCY_TIME = $(or $(LATENCY_TIME),3s)
# Where race and cover write their JSON, plain log and failed tests' output
# (make check: dist/check).
TESTOUT  ?= $(DIST)
# The tag that leaves out the thousand types of the sweep benchmarks
# (bench_sweep_test.go): a minute of every build of the test package,
# saved where they do not run: test, race, cover, stress and staticcheck
# leave them out; smoke runs the other benchmarks from the builds of race
# and stress, and type-checks the sweeps (go vet).
NOSWEEPS ?= -tags topic_nosweeps
# race runs the tests -short: the stress tests run a fraction of their
# rounds under the detector (which finds a race in any run where two
# accesses are unordered, not only when they collide), and all of them
# without it, in cover. SHORT= runs them whole.
SHORT    ?= -short
# race compiles the core without inlining: its test package, a type or
# more per test, each instantiating the core's generic code, builds faster,
# and its tests run as fast under the detector, which orders the same
# synchronisation. The tests that count allocations pass so too, and run
# inlined in stress. RACEGC= builds it inlined.
RACEGC   ?= -gcflags=$(CORE)=-l
# The race detector's build (RACEBUILD) is the only build of the modules
# it tests: staticcheck (go list -export), smoke's benchmarks of the
# packages other than the core, vet-topics and browser take it from the
# build cache, run after race, rather than compile nats-server, the
# OpenTelemetry SDK and the core's test package once more without the
# detector (none of them measures the code the compiler makes). The files
# a race build leaves out (guard_increment_tso.go, handler_stack_test.go)
# staticcheck does not see: smoke vets the core's package without the
# detector. Flags without a space: staticcheck takes them through GOFLAGS
# (RACEENV).
RACEBUILD = -race $(RACEGC)
RACEENV   = GOFLAGS='$(strip $(GOFLAGS) $(RACEBUILD))'
# go vet's every check, run by go test on the packages it builds (by
# default go test runs a few): race vets every package of every module,
# from the export data of its own build, where a go vet beside it would
# compile every dependency once more; cover, on the same packages, leaves
# vet to it (COVERVET); smoke vets the sweeps.
VETALL   ?= -vet=all
COVERVET ?= -vet=off
# The coverage of the core and its mechanisms: make cover's, and make
# stress's with STRESSCOVER=1 (make check), which measures it on the same
# tests run whole. Not in the race detector's build: there the counters are
# atomic, and the detector watches each, which made the race run three times
# as long. COVERBUILD is what they compile; smoke builds the core's
# benchmarks so too, from stress's build in make check.
COVERBUILD = -cover -coverpkg=$(COVERPKG)
coverflags = $(COVERBUILD) -coverprofile=$(abspath $(DIST))/cover.out
STRESSCOVER ?=
PROF     ?= cpu
REV      ?=
PORT     ?= 8080
# The version make release-check proves, and the release gorelease compares
# it with (none: the first).
RELEASE      ?= v0.1.0
RELEASE_BASE ?= none
# topicvet, built from its module (topicvet/), and the packages make
# vet-topics checks with it: every module's that uses the core, tests and
# examples included; not the comparison harness, whose peers' dependencies
# cost a minute to compile.
TOPICVET  = $(abspath $(DIST))/topicvet
TOPICPKGS ?= ./... ./natsbridge/... ./topicotel/...
# The modules released, from the root, the core first.
PUBLISHED    ?= . natsbridge topicotel topicvet
SERVE    ?= 127.0.0.1:$(PORT)

count     = $(if $(COUNT),-count=$(COUNT),$(if $(1),-count=$(1)))
benchtime = $(if $(TIME),-benchtime=$(TIME))
benchargs = -run '^$$' -bench '$(BENCH)' -benchmem $(benchtime)
# each runs its argument, a shell command, in every module folder.
each      = $(call eachof,$(MODULES),$(1))
eachof    = set -e; for m in $(1); do echo "== $$m"; (cd $$m && $(2)); done

.PHONY: all test race cover report bench save stat table regress cpu mem flame top \
	escape benchdoc lint vet build32 staticcheck fmt-check fuzz smoke demo browser check clean compare compare-smoke staticcheck-compare layout tools busy release-check \
	vet-topics topic-graph stress cover-total chromium

all: check

$(DIST):
	@mkdir -p $@

test: ## run the tests of every module
	$(call each,$(GO) test $(NOSWEEPS) $(call count) -run '$(RUN)' $(PKG))

race: | $(DIST) ## the tests of every module but the harness and topicvet (see vet-topics) under the race detector, -short (SHORT= runs them whole), uncached (RACECOUNT= caches them), and go vet's every check on them; a failed test's output in TESTOUT/race-failed/
	@MODULES='$(RACEMODULES)' bash scripts/gotest race $(TESTOUT) $(NOSWEEPS) $(SHORT) $(RACEBUILD) $(VETALL) $(if $(COUNT),-count=$(COUNT),$(RACECOUNT)) -run '$(RUN)' $(PKG)

stress: | $(DIST) ## the tests of the core, its reference models and its mechanisms run whole, without the race detector (which race runs them under, -short); STRESSCOVER=1 (make check) measures coverage as cover does, on the same run
	@MODULES=. ROOTFLAGS='$(if $(STRESSCOVER),$(coverflags))' bash scripts/gotest stress $(TESTOUT) $(NOSWEEPS) -vet=off -run '$(RUN)' . ./internal/reference ./internal/ring ./internal/queue
	$(if $(STRESSCOVER),@$(MAKE) --no-print-directory cover-total)

busy: | $(DIST) ## make race ROUNDS (10) times beside a busy loop on every core; each round's failed tests in dist/busy-N/
	bash scripts/busy -n $(ROUNDS) $(MAKE) --no-print-directory race 'TESTOUT=$(DIST)/busy-$$(BUSY_ROUND)'

release-check: | $(DIST) ## prove the release RELEASE: a module proxy from the committed tree, each module got and run outside the workspace, gorelease against RELEASE_BASE; output in dist/release/
	cd tools && GOWORK=off $(GO) run ./cmd/releasecheck -repo .. -out $(abspath $(DIST))/release -version $(RELEASE) -base $(RELEASE_BASE) $(PUBLISHED)

tools: ## vet, staticcheck and test the developer tools' own code (tools/cmd, tools/internal), outside the workspace
	cd tools && GOWORK=off $(GO) vet ./... && GOWORK=off $(TOOL) staticcheck ./... && GOWORK=off $(GO) test $(call count) ./...

layout: ## fail if a module's go.mod replaces a module of this repository (it must require a release; go.work points at the tree), or a published module lacks the LICENSE
	@if grep -nE 'replace .*github.com/seedaa7df82c/topic[/ ]|^[[:space:]]*github.com/seedaa7df82c/topic[^ ]* [^ ]+ =>' $$(find . -name go.mod -not -path './$(DIST)/*' -not -path '*/testdata/*'); then \
		echo "a go.mod replaces a module of this repository: use the go.work workspace instead (docs/development.md, Releasing)"; exit 1; fi
	@test -f go.work || { echo "go.work is missing"; exit 1; }
	@for m in $(PUBLISHED); do cmp -s LICENSE $$m/LICENSE || { echo "$$m/LICENSE is missing or differs from LICENSE: each published module's zip carries it"; exit 1; }; done

cover: | $(DIST) ## coverage of the core and its mechanisms by their tests and the reference's; fails under COVERMIN%
	@MODULES=. bash scripts/gotest cover $(TESTOUT) $(NOSWEEPS) $(COVERVET) $(coverflags) -run '$(RUN)' . ./internal/reference ./internal/ring ./internal/queue
	@$(MAKE) --no-print-directory cover-total

cover-total: ## the total of the coverage profile dist/cover.out, into dist/cover.txt; fails under COVERMIN%
	@$(GO) tool cover -func=$(DIST)/cover.out | tail -n 1 | tee $(DIST)/cover.txt
	@awk -v min=$(COVERMIN) '{ sub(/%/, "", $$NF); if ($$NF + 0 < min) { print "coverage " $$NF "% is under " min "%"; exit 1 } }' $(DIST)/cover.txt

report: | $(DIST) ## HTML of the coverage profile (made by make cover if missing) in dist/cover.html
	@test -f $(DIST)/cover.out || $(MAKE) --no-print-directory cover
	$(GO) tool cover -html=$(DIST)/cover.out -o $(DIST)/cover.html
	@echo "open $(DIST)/cover.html"

bench: | $(DIST) ## run the benchmarks into dist/bench.txt
	$(GO) test $(benchargs) $(call count) $(PKG) | tee $(DIST)/bench.txt

save: | $(DIST) ## save a baseline: benchmarks, count 10, into dist/bench-base.txt
	$(GO) test $(benchargs) $(call count,10) . | tee $(DIST)/bench-base.txt

stat: | $(DIST) ## benchmarks again, count 10, and benchstat against the baseline
	@test -f $(DIST)/bench-base.txt || { echo "no $(DIST)/bench-base.txt: run make save first" >&2; exit 1; }
	$(GO) test $(benchargs) $(call count,10) . | tee $(DIST)/bench-new.txt
	$(TOOL) benchstat base=$(DIST)/bench-base.txt new=$(DIST)/bench-new.txt | tee $(DIST)/stat.txt

table: | $(DIST) ## COUNT (10) rounds of every benchmark, TIME each (LATENCY_TIME for BenchmarkLatency, if set), then the README's tables in dist/bench-table.md
	$(GO) test -c -o $(DIST)/table.test .
	for i in $$(seq $(or $(COUNT),10)); do \
		$(DIST)/table.test -test.run='^$$' -test.bench='$(BENCH)' $(if $(LATENCY_TIME),-test.skip='^BenchmarkLatency$$') -test.benchmem -test.count=1 $(if $(TIME),-test.benchtime=$(TIME)); \
		$(if $(LATENCY_TIME),$(DIST)/table.test -test.run='^$$' -test.bench='^BenchmarkLatency$$' -test.count=1 -test.benchtime=$(LATENCY_TIME);) \
	done | tee $(DIST)/bench-rounds.txt
	(cd tools && GOWORK=off $(GO) run ./cmd/benchtable $(abspath $(DIST))/bench-rounds.txt) | tee $(DIST)/bench-table.md

benchdoc: | $(DIST) ## COUNT (5) rounds of every benchmark of the core, TIME (300ms) each and LATENCY_TIME (3s) BenchmarkLatency, then docs/benchmarks.md and the README's summary written from them, stamped (run it on a quiet machine)
	$(MAKE) --no-print-directory table COUNT=$(BENCHDOC_COUNT) TIME=$(BENCHDOC_TIME) LATENCY_TIME=$(BENCHDOC_LATENCY_TIME)
	cd tools && GOWORK=off $(GO) run ./cmd/benchtable -doc $(CURDIR)/docs/benchmarks.md -readme $(CURDIR)/README.md \
		-go "$$($(GO) env GOVERSION) $$($(GO) env GOOS)/$$($(GO) env GOARCH)" \
		-commit "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . ':!docs/benchmarks.md' ':!README.md' || echo ' with uncommitted changes')" \
		-date "$$(date -u +%F)" -cores "$$(nproc)" -command 'make benchdoc COUNT=$(BENCHDOC_COUNT) TIME=$(BENCHDOC_TIME) LATENCY_TIME=$(BENCHDOC_LATENCY_TIME)' \
		$(abspath $(DIST))/bench-rounds.txt

regress: | $(DIST) ## interleaved benchmarks of the working tree against REV, then benchstat
	@test -n '$(REV)' || { echo "usage: make regress REV=<git revision>" >&2; exit 2; }
	PKG=. COUNT='$(COUNT)' BENCH='$(BENCH)' TIME='$(TIME)' bash scripts/regress '$(REV)' $(DIST)

cpu: | $(DIST) ## CPU profile of the benchmarks into dist/cpu.prof
	$(GO) test $(benchargs) $(call count) -o $(DIST)/topic.test -cpuprofile=$(DIST)/cpu.prof .

mem: | $(DIST) ## memory profile of the benchmarks into dist/mem.prof
	$(GO) test $(benchargs) $(call count) -o $(DIST)/topic.test -memprofile=$(DIST)/mem.prof -memprofilerate=1 .

flame: $(PROF) ## profile (PROF=cpu|mem), then the pprof web UI on 127.0.0.1:PORT
	$(PPROF) -http=127.0.0.1:$(PORT) $(DIST)/topic.test $(DIST)/$(PROF).prof

top: $(PROF) ## profile (PROF=cpu|mem), then the top functions
	$(PPROF) -top -nodecount=30 $(DIST)/topic.test $(DIST)/$(PROF).prof | tee $(DIST)/top.txt

escape: | $(DIST) ## escape analysis of the package and its instantiations, heap lines shown once each
	$(GO) test -c -o $(DIST)/escape.test -gcflags='-m=1' . 2>$(DIST)/escape.txt
	@grep -E '^\./([^/]+|internal/[^/]+/[^/]+)\.go:.*(escapes to heap|moved to heap)' $(DIST)/escape.txt | grep -v '_test\.go:' \
	| sed -E 's/\[go\.shape[^]]*(\[[^]]*\])?[^]]*\]/[…]/g' | sort -t: -k1,1 -k2,2n -k3,3n \
	| awk -F: '!seen[$$1 FS $$2 FS $$3]++' | tee $(DIST)/escape-topic.txt

lint: vet staticcheck ## go vet and staticcheck on every module

vet: build32 ## go vet on the packages of every module, and the core built for a 32-bit platform (386)
	$(GO) vet $(WORKPKGS)

# 386 stands for every 32-bit platform: the core has no file of its own for
# any of them (guard_increment.go serves every one but amd64), and their
# alignment of 64-bit words and size of int are the same.
build32: ## the core built for a 32-bit platform (386), where a 64-bit atomic must be aligned and int is 32 bits
	GOARCH=386 $(GO) build .

staticcheck: ## staticcheck on the packages of every module but the comparison harness: those race tests from the race detector's build, topicvet's without the detector, as vet-topics builds them
	$(RACEENV) $(TOOL) staticcheck $(NOSWEEPS) $(RACEPKGS)
	$(TOOL) staticcheck ./$(ANALYZERS)/...

vet-topics: | $(DIST) ## topicvet's tests, then its checks on TOPICPKGS, through go vet (which reuses the build cache); clean, or each finding silenced with its reason
	cd topicvet && $(GO) build -o $(TOPICVET) ./cmd/topicvet && $(GO) test $(VETALL) $(call count) -run '$(RUN)' ./...
	$(GO) vet -vettool=$(TOPICVET) $(RACEBUILD) $(TOPICPKGS)

topic-graph: | $(DIST) ## the demo's topic graph (topicvet graph -format dot) drawn by Graphviz, installed when missing, into docs/topic-graph.svg
	@command -v dot >/dev/null || { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y graphviz; }
	cd topicvet && $(GO) build -o $(TOPICVET) ./cmd/topicvet
	$(TOPICVET) graph -format dot ./cmd/topic-demo > $(DIST)/topic-graph.dot
	dot -Tsvg $(DIST)/topic-graph.dot -o docs/topic-graph.svg

staticcheck-compare: ## staticcheck on the comparison harness (compare/), and its peers' packages it depends on
	$(TOOL) staticcheck ./$(HARNESS)/...

fmt-check: ## fail, listing them, if any Go file of the repository (tracked, or new and not ignored) needs gofmt
	@files=$$(git ls-files -co --exclude-standard -z '*.go' | xargs -0 "$$($(GO) env GOROOT)/bin/gofmt" -l) || exit 1; \
	if [ -n "$$files" ]; then echo "gofmt needed (run go fmt ./... in its module):"; echo "$$files"; exit 1; fi

fuzz: ## fuzz each target of FUZZ against its reference model for FUZZTIME (one build, internal/reference); FUZZMIN caps each minimization
	set -e; cd internal/reference; for f in $(FUZZ); do $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMIN) .; done

smoke: | $(DIST) ## every benchmark of every module once, so none rots, but the core's sweeps, which it type-checks; in make check, the core's from stress's build, the others' from race's and vet-topics'
	$(GO) vet $(RACEGC) .
	$(GO) test -c $(NOSWEEPS) $(COVERBUILD) -o $(DIST)/smoke.test .
	$(DIST)/smoke.test -test.run='^$$' -test.bench=. -test.benchtime=1x
	$(call eachof,$(RACEMODULES),$(GO) test $(RACEBUILD) -run '^$$' -bench . -benchtime=1x $$($(GO) list ./... | grep -vx '$(CORE)'))
	$(call eachof,$(ANALYZERS),$(GO) test -run '^$$' -bench . -benchtime=1x ./...)

demo: ## run the demo program, then serve a busy broker's debug page on SERVE (127.0.0.1:PORT; PORT=0 a free port) until interrupted; SERVE= only runs it
	$(GO) run ./cmd/topic-demo $(if $(SERVE),-serve $(SERVE))

browser: chromium | $(DIST) ## the demo's debug page in headless Chromium (Debian's chromium): its DOM checked, a screenshot in dist/debug-page.png
	$(GO) vet -tags browser $(RACEBUILD) ./cmd/topic-demo
	$(RACEENV) $(TOOL) staticcheck -tags browser ./cmd/topic-demo
	$(GO) test -tags browser $(RACEBUILD) -count=1 -run '^TestDebugPageInBrowser$$' -v ./cmd/topic-demo

chromium: ## install Debian's chromium, which make browser runs, when it is missing (with sudo when not root)
	@command -v chromium >/dev/null || { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	chromium --version

check: ## what CI runs: every step below, logs in dist/check/, a summary at the end
	@bash scripts/check $(MAKE) $(DIST)

compare: | $(DIST) ## compare against other brokers with compare/run, then docs/'s charts and the tables of compare/README.md and README.md from that run (run it on a quiet machine)
	DOCS=1 bash compare/run $(DIST)

compare-smoke: | $(DIST) ## the comparison harness vetted and tested, then its whole pipeline once, a millisecond per benchmark, into dist/compare-smoke (docs untouched): the harness and the drawing cannot rot
	cd $(HARNESS) && $(GO) test $(VETALL) -short -count=1 ./...
	COUNT=1 TIME=1ms CORE=0 SHORT=1 bash compare/run $(DIST)/compare-smoke

clean: ## remove dist/
	rm -rf $(DIST)
