# redeliver — the same targets README shows.
GO       ?= go
BIN      ?= bin/redeliver
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/redeliver/redeliver/cmd.version=$(VERSION) -X github.com/redeliver/redeliver/cmd.commit=$(COMMIT)

.PHONY: build examples run test test-heavy bench bench-runner bench-go bench-variants lint fuzz clean cross

build: ## build bin/redeliver
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

examples: ## build the example consumer, bin/consumer (README, Test your own consumer)
	$(GO) build -o bin/consumer ./examples/consumer

run: build ## the fixture, then the whole scenario library, on embedded SQLite in memory
	./$(BIN) run scenarios/seed-fixture.yaml
	@echo
	./$(BIN) run scenarios

# The PostgreSQL tests run against REDELIVER_TEST_POSTGRES; unset, a server
# listening on 127.0.0.1:5432 is used as the local default (user postgres,
# database test); REDELIVER_TEST_POSTGRES=off skips them. Either way one line
# says which.
PG_LOCAL := postgres://postgres@127.0.0.1:5432/test?sslmode=disable
# The same for MySQL or MariaDB (the MySQL proxy and effects tests):
# REDELIVER_TEST_MYSQL, else a server on 127.0.0.1:3306 (user root, no
# password, database test); REDELIVER_TEST_MYSQL=off skips them.
MY_LOCAL := mysql://root@127.0.0.1:3306/test

# Every package, the longest first (the example consumer's end-to-end
# runs, the root package's scripts, then the store, replay and runner
# packages) so the short ones fill in beside them; go test starts them
# in this order. Up to TEST_P test binaries run at once: the end-to-end
# ones spend much of their time waiting on the processes, brokers and
# databases they drive, so more than one per core keeps both cores busy
# (and the example consumer's package runs eight of its tests at once,
# four in the heavy tier). make test is the quick tier. A package's
# binary may run TEST_TIMEOUT: on a machine whose processes start
# slowly, the example consumer's end-to-end tests have taken 639 to 746 s,
# past go test's own 10 minutes, with both cores busy
# (docs/development.md). A race-enabled program sleeps a second at
# exit by default; GORACE=atexit_sleep_ms=10 keeps its report and drops
# the wait.
TEST_PKGS    := ./examples/consumer . ./pkg/sqlite ./pkg/replay ./pkg/runner ./cmd ./...
TEST_P       ?= 4
TEST_TIMEOUT ?= 30m
# make test-heavy is the heavy tier (REDELIVER_TEST_HEAVY=1): every seed,
# both databases' twins and the broker matrices of the example consumer's
# end-to-end tests, the quick tier's among them; CI runs it after make
# test. Its package may run 60 minutes. REDELIVER_TEST_HEAVY=all adds the
# long runs (repetitions and event counts), longer than CI's hour.
HEAVY_PKGS    := ./examples/consumer
HEAVY_TIMEOUT ?= 60m
# In make test the root package's scripts start redeliver built plain, as a
# user builds it (main_test.go): the packages' own tests run its code under
# the race detector. The heavy tier runs the scripts again with the
# race-enabled test binary as their redeliver.
# The example consumer's heavy tier runs without the race detector: make
# test has run each of its code paths under it, and the heavy tier
# repeats them on more seeds, databases and brokers, the evidence of
# their verdicts; the race detector's cost (a race-enabled redeliver
# takes about three times the CPU, and starts several times slower) would
# not fit it beside make test in CI's 90 minutes. HEAVY_RACE=-race puts
# it back.
HEAVY_RACE    ?=
# The patched copies of other modules' code, packages of this module whose
# leading _ keeps them out of ./... (docs/dependencies.md): the in-process
# Kafka the tests start, whose classic group coordinator's tests, each
# fix's among them, run here (its share-group tests time acquisition locks
# in seconds and fail on a loaded machine); and the MySQL driver, whose
# authentication tests, the fix's among them, need no server (most of its
# others want a database of their own).
KFAKE        := ./pkg/kafka/_kfake
KFAKE_RUN    ?= Classic
MYDRIVER     := ./pkg/_mysqldriver
MYDRIVER_RUN ?= ^Test(Auth|Ed25519)

# The databases the tests run against, said in one line each, exported to
# the go test beside them (a shell prefix of the recipes below).
TEST_DBS = pg="$${REDELIVER_TEST_POSTGRES:-}"; \
	if [ -z "$$pg" ] && bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' 2>/dev/null; then pg='$(PG_LOCAL)'; fi; \
	if [ "$$pg" = off ]; then pg=; fi; \
	if [ -n "$$pg" ]; then echo "make $@: PostgreSQL tests run against $$pg (REDELIVER_TEST_POSTGRES=off skips them)"; \
	else echo "make $@: no PostgreSQL at 127.0.0.1:5432, its tests are skipped; set REDELIVER_TEST_POSTGRES=postgres://USER@HOST:PORT/DB to run them"; fi; \
	my="$${REDELIVER_TEST_MYSQL:-}"; \
	if [ -z "$$my" ] && bash -c 'exec 3<>/dev/tcp/127.0.0.1/3306' 2>/dev/null; then my='$(MY_LOCAL)'; fi; \
	if [ "$$my" = off ]; then my=; fi; \
	if [ -n "$$my" ]; then echo "make $@: MySQL tests run against $$my (REDELIVER_TEST_MYSQL=off skips them)"; \
	else echo "make $@: no MySQL at 127.0.0.1:3306, its tests are skipped; set REDELIVER_TEST_MYSQL=mysql://USER@HOST:PORT/DB to run them"; fi; \
	export REDELIVER_TEST_POSTGRES="$$pg" REDELIVER_TEST_MYSQL="$$my" GORACE="$${GORACE:-atexit_sleep_ms=10}"

# The patched copies' tests run beside the module's (about 9 s, most of it
# waiting on the Kafka's group timers), their output held and shown after
# them; the driver's run even when the Kafka's fail, and either failing
# fails make test.
test: ## vet, then the quick tier of every test with the race detector
	$(GO) vet ./... $(KFAKE) $(MYDRIVER)
	@$(TEST_DBS); \
	kout=$$(mktemp); trap 'rm -f "$$kout"' EXIT; \
	{ echo "$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(KFAKE_RUN)' $(KFAKE)"; \
	  $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(KFAKE_RUN)' $(KFAKE); k1=$$?; \
	  echo "$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(MYDRIVER_RUN)' $(MYDRIVER)"; \
	  $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '$(MYDRIVER_RUN)' $(MYDRIVER); k2=$$?; \
	  [ $$k1 -eq 0 ] && [ $$k2 -eq 0 ]; } >"$$kout" 2>&1 & kpid=$$!; \
	echo "$(GO) test -race -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(TEST_PKGS)"; \
	$(GO) test -race -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(TEST_PKGS); rc=$$?; \
	wait $$kpid; krc=$$?; \
	cat "$$kout"; \
	[ $$rc -eq 0 ] && [ $$krc -eq 0 ]

test-heavy: cross ## the heavy tier: the builds for other systems, every seed, both databases' twins, the broker matrices, the scripts under the race detector
	@$(TEST_DBS); \
	echo "REDELIVER_TEST_HEAVY=1 $(GO) test $(HEAVY_RACE) -count=1 -timeout $(HEAVY_TIMEOUT) $(HEAVY_PKGS)"; \
	REDELIVER_TEST_HEAVY=1 $(GO) test $(HEAVY_RACE) -count=1 -timeout $(HEAVY_TIMEOUT) $(HEAVY_PKGS) && \
	echo "REDELIVER_TEST_HEAVY=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '^TestScripts$$' ." && \
	REDELIVER_TEST_HEAVY=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run '^TestScripts$$' .

# What only Linux or Unix has (the supervisor and /proc, process groups,
# file locks, a child's peak memory) sits behind build tags, with a
# stand-in elsewhere that says what it cannot do: the module must build for
# Windows and macOS too. From a cold cache each build takes minutes (most
# of it modernc.org/sqlite), so it runs in the heavy tier, not make test.
cross: ## the module built for Windows and macOS
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) build ./...

# The Node.js peer replay is compared with (docs/peer), installed outside
# the repository: cp -r docs/peer DIR && (cd DIR && npm install).
# make bench prints the four costs, each beside its baseline: the replay
# against the peer (wall time, CPU time, peak RSS), a replay into the example
# consumer (redeliver's CPU as a share of the consumer's), and, with BASE, the
# scenario runner and exploration against that build (make bench-runner).
# make bench-variants measures each optimisation beside the build without it.
PEER        ?=
BENCH_N     ?= 300000
BENCH_ROUNDS ?= 3
BENCH_TARGET_N ?= 20000
# The scenario runner against another build (BASE: a redeliver binary built
# from another commit), alternating, on generated scenario files.
BASE ?=
bench: build ## the four costs beside their baselines: make bench PEER=DIR [BASE=FILE]
	$(GO) run ./cmd/peerbench -peer '$(PEER)' -redeliver $(BIN) -n $(BENCH_N) -rounds $(BENCH_ROUNDS)
	EXAMPLES_REPLAY_LINES=$(BENCH_TARGET_N) $(GO) test -run '^$$' -bench 'ReplayIntoConsumer/parallel' -benchtime 1x -timeout 60m ./examples/consumer
	@if [ -n '$(BASE)' ]; then $(MAKE) --no-print-directory bench-runner BASE='$(BASE)'; \
	else echo "make bench: no BASE=FILE (a redeliver built from another commit): the scenario runner's comparison is left out"; fi

bench-runner: build ## the scenario runner against a baseline build, alternating: make bench-runner BASE=FILE
	$(GO) run ./cmd/runnerbench -base '$(BASE)' -redeliver $(BIN) -rounds $(BENCH_ROUNDS)

bench-go: ## the Go benchmarks (see docs/performance.md); REDELIVER_BENCH_N=100000 for a quick run
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

# Each optimisation beside the build without it (docs/performance.md,
# "Each optimisation"): instructions of redeliver under callgrind (user
# space, repeatable where the machine's load is not), BENCH_ROUNDS
# alternating rounds. A build tag makes each variant: noliterals, norawapi,
# nobloom on the built-in replay of a VARIANT_N-line UUID
# capture in memory; nohttpclient, norawio on a replay of VARIANT_TARGET_N
# lines into the example consumer on SQLite, started beside it (callgrind
# does not survive the signals of a child redeliver starts itself), and
# GOMAXPROCS=2 for the one processor a replay into a target runs on. The
# same tags run the Go benchmarks beside their variants:
# go test -run '^$$' -bench ReplayMemory -tags norawapi ./pkg/replay,
# go test -run '^$$' -bench 'Replay$$' -tags nohttpclient ./pkg/external.
VARIANT_N        ?= 30000
VARIANT_TARGET_N ?= 10000
VARIANTS_REPLAY  ?= noliterals norawapi nobloom
VARIANTS_TARGET  ?= nohttpclient norawio
VARIANT_PORT     ?= 18939
VG := GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file=/dev/null
bench-variants: examples ## each optimisation beside its build without it, by callgrind (needs valgrind)
	@set -e; d=bin/variants; mkdir -p $$d; \
	CGO_ENABLED=0 $(GO) build -o $$d/all .; \
	for t in $(VARIANTS_REPLAY) $(VARIANTS_TARGET); do CGO_ENABLED=0 $(GO) build -tags $$t -o $$d/$$t .; done; \
	$(GO) run ./cmd/peerbench capture -ids uuid -n $(VARIANT_N) -o $$d/uuid.ndjson; \
	$(GO) run ./cmd/peerbench capture -ids uuid -n $(VARIANT_TARGET_N) -o $$d/target.ndjson; \
	count() { $(VG) "$$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'; }; \
	for r in $$(seq $(BENCH_ROUNDS)); do for b in all $(VARIANTS_REPLAY); do \
		echo "round $$r replay $$b $$(count $$d/$$b replay --identity data.orderId $$d/uuid.ndjson)"; done; done; \
	rm -f $$d/payments.db*; \
	printf 'version: 1\ntarget:\n  http:\n    url: http://127.0.0.1:$(VARIANT_PORT)/events\neffects:\n  db: %s\n  reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]\n  table: payments\n  key: order_id\n  event: event_id\n  key_of: "{data.orderId}"\n' $$d/payments.db > $$d/target.yaml; \
	bin/consumer --listen 127.0.0.1:$(VARIANT_PORT) --db $$d/payments.db --flaw safe >$$d/consumer.log 2>&1 & pid=$$!; \
	trap 'kill $$pid' EXIT; \
	until grep -q listening $$d/consumer.log; do sleep 0.2; kill -0 $$pid; done; \
	for r in $$(seq $(BENCH_ROUNDS)); do for b in all $(VARIANTS_TARGET) GOMAXPROCS=2; do \
		case $$b in *=*) e=$$b; x=all;; *) e=; x=$$b;; esac; \
		echo "round $$r target $$b $$(env $$e $(VG) $$d/$$x replay $$d/target.ndjson --target $$d/target.yaml --seed 11 --parallel 4 --redeliver 0.1 2>&1 >/dev/null | sed -n 's/.*Collected : //p')"; done; done

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: ## gofmt, vet and staticcheck
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

FUZZTIME ?= 30s
fuzz: ## run each fuzz target for FUZZTIME
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./pkg/scenario
	$(GO) test -run '^$$' -fuzz '^FuzzExpandEnv$$' -fuzztime $(FUZZTIME) ./pkg/scenario
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./pkg/handler
	$(GO) test -run '^$$' -fuzz '^FuzzString$$' -fuzztime $(FUZZTIME) ./pkg/redact
	for f in FuzzCloudEvents FuzzKcat FuzzSQS FuzzNATS FuzzNDJSON FuzzDetect FuzzTopLevel FuzzReadSizes; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./pkg/capture || exit 1; done
	for f in FuzzWire FuzzMySQLWire FuzzWithParam FuzzBindValues; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./pkg/sqlproxy || exit 1; done
	$(GO) test -run '^$$' -fuzz '^FuzzInput$$' -fuzztime $(FUZZTIME) ./pkg/escape

clean:
	rm -rf bin
