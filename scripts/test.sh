#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs every test.
# Unit tests (with the race detector on the packages that hold shared state), fuzz seed
# corpora, the generated-docs drift check, and the end-to-end suite against real cairn
# processes and real clients.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-deps.sh
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== unit tests (race)"
go test -race -count=1 -timeout 15m $(go list ./... | grep -v /test/)
echo "== the patched raft library (third_party/etcd-raft/README.md)"
(cd third_party/etcd-raft && go vet ./... && go test -count=1 ./...)
echo "== end-to-end tests"
# Artefacts (the web console's screenshots) go under test-output/, kept for a look after
# the run; the folder is rebuilt each time.
rm -rf test-output && mkdir -p test-output
go test -count=1 -timeout 20m -artifacts -outputdir "$PWD/test-output" ./test/...
echo "artefacts:"; find test-output -type f -name '*.png' | sort
echo "== fault injection (short fixed-seed sessions; see docs/operations.md for long runs)"
go run ./test/chaos --duration 20s --seed 1 --mode strict --faults kill,pause,partition,power
go run ./test/chaos --duration 20s --seed 2 --mode write-caching --faults kill,pause,partition,power
go run ./test/chaos --duration 20s --seed 2 --mode acks1 --faults kill,pause,partition
go run ./test/chaos --duration 20s --seed 3 --mode strict --brokers 5 --faults kill,partition,move
go run ./test/chaos --duration 4s --seed 1 --mode strict --brokers 5 --min-insync-racks 3 --faults recover
go run ./test/chaos --duration 15s --seed 4 --mode strict --security sasl_ssl --faults kill,partition,power
go run ./test/chaos --duration 20s --seed 5 --mode txn --faults kill,pause,partition,power
# A calm session: the load alone, unthrottled; a leader change fails it (elections.go).
go run ./test/chaos --duration 15s --seed 6 --producers 8 --partitions 8 --faults none
