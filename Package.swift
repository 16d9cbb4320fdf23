// swift-tools-version:6.2
import PackageDescription

/// Compiler warnings in our own targets are errors: `swift build` fails on one, in CI and here.
/// Set per target, so it reaches no dependency: SwiftPM builds those with `-suppress-warnings`
/// (a new warning in a pinned package cannot fail our build).
let ownSwiftSettings: [SwiftSetting] = [.treatAllWarnings(as: .error)]

// Linux only: the code calls Glibc (write(2), adjtimex(2), flock) and links Debian's libgps
// and libmosquitto. SwiftPM has no way to declare that, so there is no `platforms:` line; it
// would only set a minimum Apple OS version, which would claim a port that does not exist.
let package = Package(
    name: "geolocate",
    products: [
        .executable(name: "geolocate", targets: ["geolocate"]),
        .library(name: "NMEA", targets: ["NMEA"]),
    ],
    // Every version exact, so each build resolves the same packages: a new release changes
    // nothing until this list does. Package.resolved is not committed (the package mirror of
    // the build machines has commit ids of its own), so this list is what holds a build.
    // swift-argument-parser above all: tests pin the text of the usage errors it words itself
    // (a missing value, an unknown option); the values it refuses are worded by our own
    // parsing functions (RefusedValue). swift-nio and swift-nio-ssl are here because
    // GeolocateDelivery and GeolocateCore import them. The 17 other packages, which async-http-client and GRDB
    // need in turn, are held by the ranges those pinned releases declare, not exactly: the
    // build machines' mirror has one version of each (only swift-nio and swift-crypto have
    // two, and both are pinned here), which is what makes the build repeatable there;
    // `swift package show-dependencies` lists them. To hold one elsewhere, pin it here too
    // (SwiftPM builds with it, warning that no target uses it); to move any, change its pin
    // and run the whole suite.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // NMEA-0183 bytes to `Fix`: no dependencies, not even Foundation.
        .target(name: "NMEA", swiftSettings: ownSwiftSettings),
        // adjtimex(2), which Swift's Glibc module lacks: whether the system clock is synchronised.
        .target(name: "CSystemClock", cSettings: [.treatAllWarnings(as: .error)]),
        // Opens /dev/null on a standard descriptor the caller closed, before anything else can
        // take its number: linked into the program only, and imported by no Swift file.
        .target(name: "CStandardStreams", cSettings: [.treatAllWarnings(as: .error)]),
        // SQLite's "unix" VFS refusing a symbolic link anywhere in a database's path (what
        // SQLITE_OPEN_NOFOLLOW does, which GRDB cannot pass): for NoFollowVFS.swift alone.
        .target(name: "CSQLiteNoFollow", cSettings: [.treatAllWarnings(as: .error)], linkerSettings: [.linkedLibrary("sqlite3")]),
        // The layers below the commands, each allowed to see only the ones above it in this list
        // (docs/ARCHITECTURE.md, "Targets"): a value cannot reach into the spool, the spool
        // cannot send, and delivery cannot collect. Their declarations are `package`: not API.
        // Values every layer shares: Record, Signals, errors, clocks, the JSON reader and writer,
        // and the file primitives every state file is written with.
        .target(
            name: "GeolocateModel",
            dependencies: ["NMEA", "CSystemClock"],
            swiftSettings: ownSwiftSettings
        ),
        // Settings: each key once, the config file, the values settings make (endpoints,
        // privacy, spool limits), and the context a command hands the core.
        .target(
            name: "GeolocateConfig",
            dependencies: ["GeolocateModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: ownSwiftSettings
        ),
        // The crash-safe SQLite spool and the last-known fix.
        .target(
            name: "GeolocateSpool",
            dependencies: [
                "NMEA",
                "GeolocateModel",
                "GeolocateConfig",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for RecordStatement.swift alone.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "CSQLiteNoFollow",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: ownSwiftSettings
        ),
        // Records to the wire: encoders, HTTP and MQTT delivery, flushing the spool.
        .target(
            name: "GeolocateDelivery",
            dependencies: [
                "NMEA",
                "GeolocateModel",
                "GeolocateConfig",
                "GeolocateSpool",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: ownSwiftSettings
        ),
        // Collecting and deciding: sources, signals, policy, privacy, the record pipeline,
        // trigger and track, and the read-only reports (status, export).
        .target(
            name: "GeolocateCore",
            dependencies: [
                "NMEA",
                "GeolocateModel",
                "GeolocateConfig",
                "GeolocateSpool",
                "GeolocateDelivery",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: ownSwiftSettings
        ),
        // The gpsd adapter: the one file that touches libgps's C types.
        .target(
            name: "GPSD",
            dependencies: ["NMEA", "GeolocateModel", "GeolocateConfig", "GeolocateCore", "CGPS", .product(name: "Logging", package: "swift-log")],
            swiftSettings: ownSwiftSettings
        ),
        // The MQTT adapter: the one file that touches libmosquitto's C types.
        .target(
            name: "Mosquitto",
            dependencies: ["GeolocateModel", "GeolocateConfig", "GeolocateDelivery", "CMosquitto"],
            swiftSettings: ownSwiftSettings
        ),
        .executableTarget(
            name: "geolocate",
            dependencies: [
                "CStandardStreams",
                "GeolocateModel",
                "GeolocateConfig",
                "GeolocateSpool",
                "GeolocateDelivery",
                "GeolocateCore",
                "GPSD",
                "Mosquitto",
                "TPM",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: ownSwiftSettings
        ),
        .executableTarget(
            name: "geolocate-bench",
            dependencies: ["NMEA", "GeolocateModel", "GeolocateConfig", "GeolocateSpool", "GeolocateDelivery", "GeolocateCore"],
            swiftSettings: ownSwiftSettings
        ),
        // A runner of inputs in the ordinary build; the libFuzzer target in `make fuzz`.
        // The TSS2 ESAPI calls geolocate makes (Debian libtss2-dev): a P-256 key made inside a
        // TPM 2.0 and persisted, its public point, ECDSA signatures, its attestation (TPM2_Certify by
        // an attestation key under the endorsement key, ActivateCredential): for TPMKey.swift alone.
        .target(name: "CTPM", cSettings: [.treatAllWarnings(as: .error)],
                linkerSettings: [.linkedLibrary("tss2-esys"), .linkedLibrary("tss2-tctildr"), .linkedLibrary("tss2-mu"),
                                .linkedLibrary("tss2-rc")]),
        // The TPM adapter: `TPMKey`, a device key no one can copy (SPEC §15).
        .target(name: "TPM", dependencies: ["GeolocateModel", "CTPM", .product(name: "Crypto", package: "swift-crypto")],
                swiftSettings: ownSwiftSettings),
        .executableTarget(
            name: "geolocate-fuzz",
            dependencies: ["NMEA", "GeolocateModel", "GeolocateConfig", "GeolocateSpool", "GeolocateDelivery", "GeolocateCore", "GPSD"],
            path: "Fuzz",
            exclude: ["corpus"],
            swiftSettings: ownSwiftSettings
        ),
        // What the test targets share (NMEA logs written for one case each, golden files, a
        // seeded generator); no product has it.
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: ownSwiftSettings),
        .testTarget(
            name: "GeolocateCoreTests",
            dependencies: ["GeolocateModel", "GeolocateConfig", "GeolocateSpool", "GeolocateDelivery", "GeolocateCore", "NMEA", "TestSupport", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Policy/policy-oracle.py"],
            resources: [.copy("Fixtures")],
            swiftSettings: ownSwiftSettings
        ),
        .testTarget(name: "NMEATests", dependencies: ["NMEA", "TestSupport"], exclude: ["ubx-oracle.py"], swiftSettings: ownSwiftSettings),
        .testTarget(name: "GPSDTests", dependencies: ["GPSD", "GeolocateModel", "NMEA"], swiftSettings: ownSwiftSettings),
        .testTarget(name: "TPMTests", dependencies: ["TPM", "GeolocateModel", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
                    swiftSettings: ownSwiftSettings),
        .testTarget(
            name: "GeolocateIntegrationTests",
            dependencies: ["GeolocateModel", "GeolocateConfig", "GeolocateSpool", "GeolocateDelivery", "GeolocateCore", "GPSD", "geolocate", "geolocate-fuzz",
                           "TestSupport"],
            exclude: ["Support/collector.py", "Support/fake-gpsd.py", "Support/fake-mqtt.py", "Support/spoof-nmea.py", "Support/pty-nmea.py", "Support/ubx-stream.py",
                      "Support/fresh-nmea.py", "Support/pam-harness.sh", "Support/device-harness.sh", "Support/jws-tool.py",
                      "Support/verify-kit-test.py", "Golden"],
            swiftSettings: ownSwiftSettings
        ),
    ]
)
