# geolocate: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: deps build release install demo gpsd-demo test bench man fuzz clean

PREFIX ?= /usr/local

# Installs what building and testing need when missing (apt: libgps-dev gpsd gpsd-clients).
deps:
	./scripts/install-deps

build: deps
	$(SWIFT) build

# The binary to ship: optimised, with the Swift runtime linked in, so a device needs only
# Debian's libgps and libsqlite3 (it starts in half the time of a dynamically linked build).
release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product geolocate

install: release
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/geolocate
	install -m 0755 "$$($(SWIFT) build -c release --static-swift-stdlib --show-bin-path)/geolocate" $(DESTDIR)$(PREFIX)/bin/geolocate
	install -m 0644 man/geolocate.1 $(DESTDIR)$(PREFIX)/share/man/man1/geolocate.1
	install -m 0644 share/geolocate/gazetteer.bin share/geolocate/GAZETTEER.md $(DESTDIR)$(PREFIX)/share/geolocate/

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

# Fuzzes the NMEA reader and epoch assembler with libFuzzer and AddressSanitizer, seeded with the
# gpsd corpus and the examples (FUZZ_SECONDS=60); a finding is saved under .build/fuzz/.
FUZZ_SECONDS ?= 60
fuzz:
	mkdir -p .build/fuzz/corpus
	cp ../shared/corpus/gpsd/*.log Examples/nmea/*.nmea .build/fuzz/corpus/
	$(SWIFT)c -sanitize=fuzzer,address -parse-as-library -O Sources/GeolocateCore/NMEA/*.swift \
		Sources/GeolocateCore/Sources/Fix.swift Sources/GeolocateCore/Support/GeolocateError.swift \
		Fuzz/fuzz-nmea.swift -o .build/fuzz/fuzz-nmea
	.build/fuzz/fuzz-nmea -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -rss_limit_mb=2048 \
		-artifact_prefix=.build/fuzz/ .build/fuzz/corpus

# Regenerates man/geolocate.1 from the argument parser (commit the result).
man: deps
	$(SWIFT) package plugin --allow-writing-to-package-directory generate-manual --output-directory man

clean:
	rm -rf .build bench-data
