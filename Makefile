# The two commands a newcomer needs (README.md): `make run` and `make test`.
SWIFT ?= swift

.PHONY: run test build release install lint format bench-http clean fuzz

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

# `make install` (as root, or with DESTDIR): builds the release executable and installs it as
# $(DESTDIR)$(PREFIX)/bin/herald. CONFIG=debug installs the debug build (scripts/test.sh does).
PREFIX ?= /usr/local
CONFIG ?= release

install:
	@scripts/bootstrap.sh
	$(SWIFT) build -c $(CONFIG) --product herald
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 755 "$$($(SWIFT) build -c $(CONFIG) --show-bin-path)/herald" "$(DESTDIR)$(PREFIX)/bin/herald"

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
