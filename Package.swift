// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "geolocate",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "geolocate", targets: ["geolocate"]),
        .library(name: "GeolocateCore", targets: ["GeolocateCore"]),
        .library(name: "NMEA", targets: ["NMEA"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
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
        .target(name: "NMEA"),
        // adjtimex(2), which Swift's Glibc module lacks: whether the system clock is synchronised.
        .target(name: "CSystemClock"),
        .target(
            name: "GeolocateCore",
            dependencies: [
                "NMEA",
                "CSystemClock",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The gpsd adapter: the one file that touches libgps's C types.
        .target(
            name: "GPSD",
            dependencies: ["GeolocateCore", "CGPS", .product(name: "Logging", package: "swift-log")]
        ),
        // The MQTT adapter: the one file that touches libmosquitto's C types.
        .target(
            name: "Mosquitto",
            dependencies: ["GeolocateCore", "CMosquitto"]
        ),
        .executableTarget(
            name: "geolocate",
            dependencies: [
                "GeolocateCore",
                "GPSD",
                "Mosquitto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "geolocate-bench",
            dependencies: ["GeolocateCore"]
        ),
        // A runner of inputs in the ordinary build; the libFuzzer target in `make fuzz`.
        .executableTarget(
            name: "geolocate-fuzz",
            dependencies: ["GeolocateCore", "GPSD"],
            path: "Fuzz",
            exclude: ["corpus"]
        ),
        .testTarget(
            name: "GeolocateCoreTests",
            dependencies: ["GeolocateCore", "NMEA", .product(name: "GRDB", package: "GRDB.swift")],
            exclude: ["Policy/policy-oracle.py"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "NMEATests", dependencies: ["NMEA"]),
        .testTarget(name: "GPSDTests", dependencies: ["GPSD", "NMEA"]),
        .testTarget(
            name: "GeolocateIntegrationTests",
            dependencies: ["GeolocateCore", "GPSD", "geolocate", "geolocate-fuzz"],
            exclude: ["Support/collector.py", "Support/fake-gpsd.py", "Support/spoof-nmea.py", "Golden"]
        ),
    ]
)
