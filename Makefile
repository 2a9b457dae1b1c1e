# Herald. `make test` is what CI (.ci/run) runs; `make demo` shows Herald
# working in the network lab. Both need Linux and root (network
# namespaces); the scripts install what is missing.

# GOFLAGS, CGO_ENABLED, GOWORK: hack/build.env, shared with the scripts and
# the tests' own builds.
export GOFLAGS := $(shell . ./hack/build.env && echo "$$GOFLAGS")
export CGO_ENABLED := $(shell . ./hack/build.env && echo "$$CGO_ENABLED")
export GOWORK := $(shell . ./hack/build.env && echo "$$GOWORK")
GO ?= go
FUZZTIME ?= 10s
BIN := bin
# How Herald's binaries are built everywhere (here, in the Dockerfile, and
# as testenv.BuildFlags for every build the tests make): GOFLAGS' -trimpath
# and grpcnotrace (hack/build.env says why) spelt out for the Dockerfile's
# sake, and stripped.
GOBUILDFLAGS := -trimpath -tags=grpcnotrace -ldflags=-s\ -w

include hack/versions.env
include lab.mk

.PHONY: all build programs images release demo test unit unit-lab unit-api unit-race e2e fuzz verify generate deps control-plane tools metallb test-programs modules e2e-build prebuild bench bench-controller bench-bgp-layouts bench-scale clean help
IMAGE_REPO ?= ghcr.io/herald-lb
IMAGE_TAG ?= v0.1.0

all: build

help:
	@echo "make build         build bin/controller, bin/speaker and bin/kubectl-herald (the kubectl plugin)"
	@echo "make images        OCI image archives (amd64+arm64) in bin/images, no container engine needed"
	@echo "make release       images, plus kubectl-herald archives, checksums.txt and krew manifest in bin/release"
	@echo "make test          everything CI runs: deps, verify, unit + integration, end-to-end, fuzz"
	@echo "make demo          bring up the lab, run Herald in it, show a Service being served"
	@echo "make programs      etcd, Kubernetes, helm and promtool for the tests, built once into ~/.cache/herald"
	@echo "make lab-up        the network lab alone (lab-down, lab-status)"
	@echo "make generate      regenerate deepcopy, CRDs, client and rendered manifests"
	@echo "make verify        fail on stale generated files, gofmt, vet, staticcheck, long files"
	@echo "make bench         print the benchmark figures"
	@echo "make bench-bgp-layouts  BGP failover figures of every peering layout, as one table"
	@echo "make bench-scale   10,000 Services and 200 members: figures next to their goals"

build:
	@mkdir -p $(BIN)
	$(GO) build $(GOBUILDFLAGS) -o $(BIN)/controller ./controller
	$(GO) build $(GOBUILDFLAGS) -o $(BIN)/speaker ./speaker
	$(GO) build $(GOBUILDFLAGS) -o $(BIN)/kubectl-herald ./kubectl-herald

# Images as OCI image layouts in tar files (bin/images/{controller,speaker,
# podserver,pause}.tar), each a multi-architecture index for IMAGE_ARCHES,
# built in Go without a container engine (hack/images). Import them with
# `ctr -n k8s.io images import --all-platforms bin/images/speaker.tar` or
# `kind load image-archive`. They are not published to any registry.
IMAGE_ARCHES ?= amd64 arm64
images:
	@for a in $(IMAGE_ARCHES); do mkdir -p $(BIN)/static/linux-$$a; \
	  echo "building linux/$$a binaries"; \
	  GOOS=linux GOARCH=$$a $(GO) build $(GOBUILDFLAGS) -o $(BIN)/static/linux-$$a/ ./controller ./speaker ./e2e/cmd/podserver ./e2e/cmd/pause || exit 1; \
	done
	$(GO) run ./hack/images -bin $(BIN)/static -out $(BIN)/images -repo $(IMAGE_REPO) -tag $(IMAGE_TAG) -arch "$(IMAGE_ARCHES)"

# The release artefacts: the images, and the kubectl plugin krew-style
# (hack/release): bin/release/kubectl-herald_<version>_<os>_<arch>.tar.gz
# for each of RELEASE_PLATFORMS, checksums.txt and the krew manifest
# herald.yaml, whose URIs point where a GitHub release of IMAGE_TAG would
# serve the archives. Nothing is published.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release: images
	@for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  mkdir -p $(BIN)/static/$$os-$$arch; \
	  echo "building kubectl-herald for $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(GOBUILDFLAGS) -o $(BIN)/static/$$os-$$arch/kubectl-herald ./kubectl-herald || exit 1; \
	done
	$(GO) run ./hack/release -bin $(BIN)/static -out $(BIN)/release -version $(IMAGE_TAG) -platforms "$(RELEASE_PLATFORMS)"

deps:
	@if [ "$$(id -u)" = 0 ]; then hack/install-deps.sh; else echo "make deps: not root; skipping Debian packages (network tests will skip)"; fi

# The programs the tests run that are not Herald, at the versions in
# hack/versions.env, built once into ~/.cache/herald by
# hack/build-programs.sh from one wrapper module (so what they share is
# compiled once): control-plane is etcd and the Kubernetes components,
# tools is helm, promtool and prometheus (the chart and monitoring
# tests, and rendering manifests/ from the chart), programs is both.
# MetalLB's binaries come from the same module, built by metallb when
# its images are missing (quick after programs: what they share is
# compiled). A cold build takes minutes, once (docs/benchmarks.md). Run
# as root, they build with transparent huge pages always on
# (HERALD_BUILD_THP=always; the machine's mode is put back afterwards,
# and HERALD_BUILD_THP= leaves it alone): a compile's heap is new
# memory, and with huge pages it takes far fewer page faults and less
# CPU time (hack/build-programs.sh).
HERALD_BUILD_THP ?= always
control-plane tools programs test-programs: export HERALD_BUILD_THP := $(HERALD_BUILD_THP)
control-plane:
	@echo "Building the test control plane (Kubernetes $(KUBERNETES_VERSION), etcd $(ETCD_VERSION)) if not cached; a cold build takes 10-15 minutes..."
	hack/build-programs.sh control-plane

tools:
	hack/build-programs.sh tools

programs:
	hack/build-programs.sh control-plane tools

# MetalLB's images for e2e/metallb's takeover test (hack/build-metallb.sh),
# built once into ~/.cache/herald.
metallb:
	@hack/build-metallb.sh >/dev/null

# Every program make test runs, MetalLB's binaries with the others in one
# go build (built after them, the go command would load the wrapper
# module's packages a second time), then MetalLB's images and the
# Prometheus Operator's CRDs (e2e/helm).
test-programs:
	hack/build-programs.sh all
	@hack/build-metallb.sh >/dev/null
	@hack/prometheus-operator-crds.sh >/dev/null

# Herald's modules, sixteen downloads at a time: the go command fetches
# GOMAXPROCS at once, two on 2 cores, and from a slow module proxy the
# download is most of a fresh machine's wait (hack/build-programs.sh,
# fetch; HERALD_FETCH_PARALLEL sets both).
modules:
	GOMAXPROCS=$${HERALD_FETCH_PARALLEL:-16} $(GO) mod download

# The lab with Herald in it, a sample Service, and a report; the lab stays
# up afterwards (make lab-down removes it).
demo: deps control-plane
	$(GO) run ./e2e/cmd/herald-demo

generate:
	hack/update-codegen.sh
	@if [ -x hack/render-manifests.sh ]; then hack/render-manifests.sh; fi

verify:
	$(BESIDE_E2E) hack/verify.sh

# On a fresh machine every program the tests run that is not Herald is
# built first (test-programs: all of them, MetalLB's binaries included, in
# one go build from one module, so that what they share compiles once;
# then MetalLB's images), while Herald's own modules download (modules);
# nothing to do when cached. They come first because built beside the
# end-to-end tests they would slow the tests and keep e2e/helm waiting
# for helm (docs/benchmarks.md).
#
# The unit packages that build network namespaces run next, with only
# compiles at nice 19 beside them (prebuild): their timing assertions
# would compete with the lab's processes. Then the
# end-to-end tests run beside everything else (the API-only unit and race
# tests, verify, the fuzzers), none of which asserts anything about time
# within a deadline the lab could starve: the lab's processes run at the
# highest CPU weight (see e2e/lab/cgroups.go). What only compiles and
# computes runs beside them at nice 10 (BESIDE_E2E): verify and the
# fuzzers: the end-to-end tests' own chain (their test binaries, Herald's
# images, then the lab) goes first and these fill the CPU time it leaves.
# unit-api and unit-race keep the default priority: leader-election and -race
# tests have deadlines. Each target's output is printed in one piece when
# it ends.
test: deps
	$(MAKE) --no-print-directory -j2 test-programs modules
	$(MAKE) --no-print-directory -j2 --output-sync=target unit-lab prebuild
	$(MAKE) --no-print-directory -j7 --output-sync=target e2e unit-race unit-api verify fuzz BESIDE_E2E="nice -n 10"

# prebuild runs e2e-build at the lowest CPU priority beside the unit
# tests that build network namespaces: those wait on timers and sockets
# and leave CPU idle (the only idle time of make test), which e2e-build
# fills. A nice-19 task gets about 1.5 % of a core beside one at nice 0,
# so the timing of those tests is not at stake. The race tests'
# dependencies are not compiled here: they would run past those tests and
# delay the end-to-end tests by as much (docs/benchmarks.md).
prebuild:
	nice -n 19 $(MAKE) --no-print-directory e2e-build

# e2e-build compiles every package the end-to-end tests and Herald's
# images are built from (not the test packages themselves, and linking
# nothing), before the other tests start: the end-to-end
# tests run with -p 1, one lab at a time, and -p 1 also compiles one
# package at a time, beside the race and API tests' compiles. Nothing to
# do when cached (a few seconds).
E2E_BUILD_PACKAGES = $(GO) list -deps -test -f '{{if and (ne .Name "main") (not .ForTest) (or .GoFiles .CgoFiles)}}{{.ImportPath}}{{end}}' ./e2e/... ./controller ./speaker
e2e-build:
	$(GO) build $$($(E2E_BUILD_PACKAGES))

# Unit and integration tests (real kube-apiserver, network namespaces for
# the L2/BGP/member-list packages; hack/unit-packages.sh says which is
# which). Packages run two at a time. The controller, speaker, member-list
# and L2 ownership packages run with the race detector.
unit: unit-lab unit-api unit-race

unit-lab:
	$(GO) test -count=1 -timeout 30m $$(GO=$(GO) hack/unit-packages.sh lab)
	CGO_ENABLED=1 $(GO) test -count=1 -race -timeout 30m $$(GO=$(GO) hack/unit-packages.sh race-lab)

unit-api:
	$(GO) test -count=1 -timeout 30m $$(GO=$(GO) hack/unit-packages.sh api)

# The race tests are their own target so that make test starts them with
# the end-to-end tests: on a fresh machine they compile race variants of
# every dependency, and run after the other API tests they would end well
# after the end-to-end tests (docs/benchmarks.md).
unit-race:
	CGO_ENABLED=1 $(GO) test -count=1 -race -timeout 30m $$(GO=$(GO) hack/unit-packages.sh race)

# End-to-end tests in the network lab. Each package brings up its own lab
# (the whole of 198.51.100.0/24 and a root leg) in a network namespace of
# its own, which holds the lab's root leg, API server address and routes
# (hack/own-network.sh, e2e/lab/world.go): nothing of a lab touches the
# machine's own namespace, so two labs can run side by side.
#
# The packages that bound the speakers' answers to tens of milliseconds
# through rolling updates and a saturated CPU (E2E_ALONE: e2e/l2,
# e2e/helm) run first, one lab at a time with no other lab beside them
# (the API, race and fuzz tests start beside them, at a CPU weight the
# lab's cgroups outweigh 256 to 1). On 2 cores a second lab beside them
# makes them fail: at equal CPU weight the other cluster's bursts leave an
# L2 speaker unscheduled long enough for a false death (two nodes
# answering), and at a weight that protects them their CPU-saturation
# test starves the other lab for seconds. Then, by default, the rest run
# in two lines side by side (E2E_SIDE_BY_SIDE=1): e2e/bgp and
# e2e/labcrash in one, everything else in the other, of about the same
# length. Their bounds are a second and more (BFD and hold-time
# withdrawals, the MetalLB takeover), most of their time is spent waiting
# on timers, and by then the other tests have ended. That order is the
# fastest measured; one lab at a time is slower, and so is starting the
# lines beside the other tests' start (docs/benchmarks.md).
# E2E_SIDE_BY_SIDE=0 runs every package one lab at a time. The e2e/bgp line is printed when it ends; a failed
# package or line does not stop the others.
E2E_SIDE_BY_SIDE ?= 1
E2E_GOTEST = $(GO) test -count=1 -p 1 -timeout 60m -exec $(CURDIR)/hack/own-network.sh
E2E_ALONE = ./e2e/l2 ./e2e/helm
E2E_BGP_LINE = ./e2e/bgp ./e2e/labcrash
e2e_rest = $$($(GO) list ./e2e/... | grep -v -E '/e2e/(l2|helm|bgp|labcrash|metallb)$$') ./e2e/metallb
ifeq ($(E2E_SIDE_BY_SIDE),1)
e2e:
	@out=$$(mktemp); status=0; \
	$(E2E_GOTEST) $(E2E_ALONE) || status=1; \
	$(E2E_GOTEST) $(E2E_BGP_LINE) >$$out 2>&1 & bgp=$$!; \
	$(E2E_GOTEST) $(e2e_rest) || status=1; \
	wait $$bgp || status=1; cat $$out; rm -f $$out; \
	exit $$status
else
e2e:
	$(E2E_GOTEST) $(E2E_BGP_LINE) $(e2e_rest) $(E2E_ALONE)
endif

# Every fuzz target for FUZZTIME, two at a time with one fuzzing worker
# each (hack/fuzz.sh; FUZZ_JOBS, FUZZ_WORKERS): a smoke run of the fuzzers
# and their corpora, a core's worth of fuzzing while it lasts.
# make fuzz FUZZTIME=10m FUZZ_WORKERS=2 fuzzes for real.
fuzz:
	FUZZTIME=$(FUZZTIME) $(BESIDE_E2E) hack/fuzz.sh

bench: bench-pure bench-controller bench-l2 bench-bgp

bench-pure:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/allocator/ ./internal/config/ ./internal/layer2/ ./internal/announce/
	$(GO) test -run '^$$' -bench '^Benchmark(Plan|ApplyOneMorePath)$$' -benchmem ./internal/bgp/

bench-controller:
	$(GO) test -count=1 -run '^$$' -bench 'Controller(StartWith1000Pending|Create1000)$$' -benchtime 1x ./internal/controller/

bench-l2:
	$(GO) test -count=1 -p 1 -run '^$$' -bench L2 -benchtime 1x -timeout 30m ./e2e/l2/

# bench-bgp ends with BenchmarkBGPLayouts' table: the failover figures
# of every BGP peering layout, with and without BFD, and the layouts
# this machine cannot run (docs/bgp-layouts.md). bench-bgp-layouts runs
# that benchmark alone.
bench-bgp:
	$(GO) test -count=1 -p 1 -run '^$$' -bench BGP -benchtime 1x -timeout 60m ./e2e/bgp/

bench-bgp-layouts:
	$(GO) test -count=1 -p 1 -run '^$$' -bench BGPLayouts -benchtime 1x -timeout 45m -exec $(CURDIR)/hack/own-network.sh ./e2e/bgp/

# The scale figures of docs/operations.md, each printed next to its goal
# (and the controller's next to the API server's floor of the same run):
# controller start with 1,000 and 10,000 pending Services, its CPU at
# 10,000 Services idle and under 100 EndpointSlice updates a second,
# speaker reconcile and new Service -> announcement at 1,000 and 10,000
# Services, 200 member-list instances under CPU saturation for 60 s,
# 10,000 prefixes from one speaker into FRR (docs/benchmarks.md keeps the
# figures). It loads every CPU for tens of minutes: run it on a quiet
# machine.
bench-scale:
	@mkdir -p $(BIN)
	@$(GO) test -count=1 -run '^$$' -bench '(Controller(StartWith(1000|10000)Pending|Steady10000)|SpeakerWith10000Services)$$' -benchtime 1x -timeout 60m ./internal/controller/ | tee $(BIN)/bench-scale.txt
	@$(GO) test -count=1 -run '^$$' -bench 'Reconcile' -benchmem -benchtime 20x ./internal/speaker/ | tee -a $(BIN)/bench-scale.txt
	@$(GO) test -count=1 -run '^$$' -bench 'ServiceToAnnouncement' -benchtime 100x ./internal/speaker/ | tee -a $(BIN)/bench-scale.txt
	@$(GO) test -count=1 -run '^$$' -bench 'MemberListSim' -benchtime 1x -timeout 20m ./internal/members/ | tee -a $(BIN)/bench-scale.txt
	@$(GO) test -count=1 -run '^$$' -bench 'FRRPrefixes' -benchtime 1x -timeout 20m ./internal/bgp/ | tee -a $(BIN)/bench-scale.txt
	@$(GO) run ./hack/benchtable < $(BIN)/bench-scale.txt

bench-controller-10k:
	$(GO) test -count=1 -run '^$$' -bench 'ControllerCreate10000' -benchtime 1x -timeout 30m ./internal/controller/

clean:
	rm -rf $(BIN)
