# redeliver — the same targets README shows.
GO       ?= go
BIN      ?= bin/redeliver
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X github.com/redeliver/redeliver/cmd.version=$(VERSION) -X github.com/redeliver/redeliver/cmd.commit=$(COMMIT)

.PHONY: build examples run test bench lint fuzz clean

build: ## build bin/redeliver
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

examples: ## build the example consumer, bin/consumer (README, Test your own consumer)
	$(GO) build -o bin/consumer ./examples/consumer

run: build ## the fixture, then the whole scenario library, on embedded SQLite in memory
	./$(BIN) run scenarios/seed-fixture.yaml
	@echo
	./$(BIN) run scenarios

test: ## vet, then every test with the race detector
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench: ## benchmarks (see docs/performance.md); REDELIVER_BENCH_N=100000 for a quick run
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

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
	for f in FuzzCloudEvents FuzzKcat FuzzSQS FuzzNATS FuzzNDJSON FuzzDetect; do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./pkg/capture || exit 1; done

clean:
	rm -rf bin
