# geolocate: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: build demo test bench man clean

build:
	$(SWIFT) build

# Replays the bundled NMEA example through `geolocate trigger` in several modes.
demo: build
	./Examples/demo.sh

# Installs what the tests need (apt packages when missing), then runs every test.
test:
	./scripts/install-deps
	$(SWIFT) test

# Replay throughput against pynmea2, and trigger latency (SPEC §9). BENCH_EPOCHS=200000 for a quick run.
bench:
	./scripts/install-deps --bench
	python3 ./scripts/bench

# Regenerates man/geolocate.1 from the argument parser (commit the result).
man:
	$(SWIFT) package plugin --allow-writing-to-package-directory generate-manual --output-directory man

clean:
	rm -rf .build bench-data
