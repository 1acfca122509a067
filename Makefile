# voiced: `make run` and `make test` work on a fresh Debian machine with only Go.
# Both first make sure the Debian packages the build needs are present
# (installing them when run as root, printing the apt-get line otherwise).

GO        ?= go
TAGS      := nolibopusfile
export GOFLAGS := -tags=$(TAGS)
BIN       := bin/voiced
ARGS      ?=

.PHONY: run build test bench bench-full soak lint deps deps-test deps-bench clean

deps:
	@deploy/debian-deps.sh build

deps-test:
	@deploy/debian-deps.sh test

deps-bench:
	@deploy/debian-deps.sh bench

build: deps
	$(GO) build -o $(BIN) ./cmd/voiced

run: build
	./$(BIN) serve $(ARGS)

test: deps-test
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 12m ./...

# Micro-benchmarks of every hot path, webhook deliveries/s to a local
# receiver and ledger debits/s on SQLite and PostgreSQL, RTP/jitter/pacer
# costs, the engine's end-of-turn latency, a 400-session realtime load, the
# HTTP benchmark (bench/http.sh), a 30-second voicebench smoke load, what a
# call costs the control plane of deploy/local-cluster.sh
# (BenchmarkClusterCost, README "Scaling out"), and issue 31's turn-taking
# scorecard (40 items per condition over the realtime WebSocket, about 8
# minutes; A/B between builds: go run ./cmd/turnscore -a OLD -b NEW exits 1
# when NEW is worse).
bench: deps-bench
	$(GO) test -run '^$$' -bench 'G711|Opus|Resample|DSP|Chain|Mix|Ring|Gain|RMS|PCM|WAV|MP3' -benchmem ./codecs/... ./media/ ./media/dsp/
	$(GO) test -run '^$$' -bench 'Deliveries|Debit' -benchmem ./control/webhook/ ./storage/
	$(GO) test -run '^$$' -bench 'RTP|Jitter|Pacer' -benchmem ./media/rtp/ ./media/jitter/ ./media/pace/
	$(GO) test -run '^$$' -bench 'TurnLatency' -benchtime 300x ./media/agent/
	VOICED_LOAD_SESSIONS=400 $(GO) test -run '^$$' -bench 'RealtimeLoad' -benchtime 1x ./media/realtime/
	VOICED_SIPP_LOAD_CALLS=200 VOICED_SIPP_LOAD_HOLD=20s $(GO) test -count=1 -run '^TestSippLoad$$' -v ./cmd/voiced/
	VOICED_SIM_STRICT=1 VOICED_SIM_CALLS=50 VOICED_SIM_ENGINE=offline $(GO) test -count=1 -timeout 20m -run '^TestSimulatedCallsAtOnce$$' -v ./cmd/voiced/
	$(GO) test -run '^$$' -bench 'PacerWhileDecoding|StreamWrite' -benchtime 3x -count 3 ./ai/stt/pocketsphinx/
	$(GO) test -run '^$$' -bench 'GetCall' -benchtime 3s ./control/mcp/
	$(GO) test -run '^$$' -bench 'MCPToolCall' -benchtime 3s ./cmd/voiced/
	VOICED_COST_CALLS=300 VOICED_COST_HOLD=5s VOICED_COST_OUTBOUND=100 VOICED_COST_REALTIME=50 $(GO) test -count=1 -run '^$$' -bench 'ClusterCost' -benchtime 1x ./cmd/voiced/
	$(GO) test -run '^$$' -bench 'KnowledgeTool' -benchtime 2000x ./cmd/voiced/
	$(GO) test -run '^$$' -bench 'KnowledgeSearch' -benchtime 2000x ./storage/
	$(GO) test -run '^$$' -bench 'Ingest' -benchtime 5x ./control/knowledge/
	bench/http.sh
	bench/voicebench-smoke.sh
	$(GO) run ./cmd/turnscore -items 40

# Issue 31's "no silent closes" soak: the scorecard's conditions round
# after round for 30 minutes, 4 sessions at once, over the realtime
# WebSocket; exits 1 if the server closed any session without a reason
# (an error event or a WebSocket close reason).
soak: deps-bench
	$(GO) run ./cmd/turnscore -duration 30m -parallel 4 -items 10

# Our media node side by side with rtpengine and a Go UDP echo floor,
# driven by voicebench (about 30 minutes; bench/voicebench-full.sh lists
# the knobs); writes bench/RESULTS-voicebench.md and bench/results/voicebench/,
# and copies the headline into bench/RESULTS.md.
bench-full: deps-bench
	bench/voicebench-full.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
