# geolocate: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: deps build demo gpsd-demo test bench man clean

# Installs what building and testing need when missing (apt: libgps-dev gpsd gpsd-clients).
deps:
	./scripts/install-deps

build: deps
	$(SWIFT) build

# Replays the bundled NMEA example through `geolocate trigger` in several modes.
demo: build
	./Examples/demo.sh

# The same job through a private gpsd started by gpsfake (no receiver needed).
gpsd-demo: build
	./Examples/gpsd-demo.sh

# Installs what the tests need (apt packages when missing), then runs every test.
test: deps
	$(SWIFT) test

# Replay throughput against pynmea2, trigger latency, force-current on gpsd against gpspipe
# (SPEC §9). BENCH_EPOCHS=200000 for a quick run.
bench:
	./scripts/install-deps --bench
	python3 ./scripts/bench

# Regenerates man/geolocate.1 from the argument parser (commit the result).
man: deps
	$(SWIFT) package plugin --allow-writing-to-package-directory generate-manual --output-directory man

clean:
	rm -rf .build bench-data
