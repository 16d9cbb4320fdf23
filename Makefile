# geolocate: the two commands a newcomer needs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: deps build release install deb demo gpsd-demo test bench man docs fuzz tsan clean

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
	install -m 0755 -s "$$($(SWIFT) build -c release --static-swift-stdlib --show-bin-path)/geolocate" $(DESTDIR)$(PREFIX)/bin/geolocate
	install -m 0644 man/geolocate.1 $(DESTDIR)$(PREFIX)/share/man/man1/geolocate.1
	install -m 0644 share/geolocate/gazetteer.bin share/geolocate/GAZETTEER.md $(DESTDIR)$(PREFIX)/share/geolocate/

# The Debian package (SPEC §13) of the release binary: geolocate_VERSION_ARCH.deb here, or in
# DEB_OUT (scripts/make-deb; units and control files in packaging/). `scripts/check-deb FILE`
# checks it: lintian, systemd-analyze verify, and as root dpkg -i, --version, man, completion,
# dpkg -r.
deb: release
	./scripts/install-deps --deb
	GEOLOCATE_BIN="$$($(SWIFT) build -c release --static-swift-stdlib --show-bin-path)/geolocate" ./scripts/make-deb

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

# Fuzzes every parser of outside input (Fuzz/FuzzTargets.swift: NMEA, gpsd reports, config
# files, flag and config values, state files, spooled records, geocoder answers) with libFuzzer
# and AddressSanitizer, FUZZ_SECONDS each (60), from the seeds in Fuzz/corpus.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= nmea gpsd config text state spool geocoder zones
FUZZ_SEED ?= 0
fuzz: deps
	$(SWIFT) build --product geolocate-fuzz --scratch-path .build-fuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DGEOLOCATE_FUZZING
	FUZZ_SEED=$(FUZZ_SEED) ./scripts/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The whole test suite once under ThreadSanitizer (a build of its own in .build-tsan). Every
# process writes its reports to .build-tsan/reports/, the binaries the tests start included;
# any report fails the run.
tsan: deps
	rm -rf .build-tsan/reports && mkdir -p .build-tsan/reports
	TSAN_OPTIONS="log_path=$(CURDIR)/.build-tsan/reports/tsan" $(SWIFT) test --sanitize=thread --scratch-path .build-tsan; \
	status=$$?; \
	if ls .build-tsan/reports/tsan.* >/dev/null 2>&1; then \
		echo "make tsan: ThreadSanitizer reports in .build-tsan/reports/" >&2; exit 1; fi; \
	exit $$status

# Regenerates man/geolocate.1 from the argument parser (commit the result).
# Regenerates man/geolocate.1: the argument parser's page (generate-manual plugin) with its
# generic EXIT STATUS replaced by the hand-written sections of man/sections.mdoc. Commit it.
MAN_GENERATED = .build/generate-manual
man: deps
	rm -rf $(MAN_GENERATED) && mkdir -p $(MAN_GENERATED)
	$(SWIFT) package plugin --allow-writing-to-package-directory generate-manual --output-directory $(MAN_GENERATED)
	./scripts/make-man $(MAN_GENERATED)/geolocate.1 man/sections.mdoc man/geolocate.1
	rm -rf $(MAN_GENERATED)
	@out="$$(groff -mandoc -ww -z man/geolocate.1 2>&1)"; [ -z "$$out" ] || { echo "$$out" >&2; exit 1; }

# Rewrites the generated parts of the docs: the table of configuration keys in docs/REFERENCE.md.
docs: build
	python3 ./scripts/update-docs

clean:
	rm -rf .build .build-fuzz .build-tsan .build-deb bench-data
