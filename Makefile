# The two commands a newcomer needs (README.md): `make run` and `make test`.
SWIFT ?= swift

.PHONY: run test build release lint format bench-http clean fuzz

run: release
	@scripts/run.sh

test:
	@scripts/test.sh

build:
	@scripts/bootstrap.sh
	$(SWIFT) build

release:
	@scripts/bootstrap.sh
	$(SWIFT) build -c release --product herald

lint:
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests

format:
	$(SWIFT) format --in-place --recursive --parallel Package.swift Sources Tests

# libFuzzer over the request parsers (scripts/fuzz.sh); FUZZ_SECONDS per target, default 60.
fuzz:
	@scripts/fuzz.sh

bench-http: release
	@scripts/bootstrap.sh --bench
	@Benchmarks/http-healthz.sh

clean:
	rm -rf .build
