import Foundation
import GeolocateDelivery
import GeolocateModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A populated place from the gazetteer: what an offline reverse geocoder can tell.
package struct Place: Sendable, Equatable {
    /// ISO 3166-1 alpha-2, upper case.
    package var countryCode: String
    /// The first-level administrative division (state, province, region); `nil` when GeoNames has none.
    package var district: String?
    package var city: String
    package var latitude: Double
    package var longitude: Double
}

/// The offline reverse geocoder: the nearest of GeoNames' 144,561 places of 1,000 people or
/// more (`share/geolocate/gazetteer.bin`, made by `scripts/make-gazetteer.py`).
///
/// The file is mapped, not read: places are sorted into half-degree cells with an index of
/// where each cell starts, so opening it costs a few system calls and a lookup reads only the
/// cells around the point (microseconds), which keeps a `trigger` that geocodes as
/// fast as one that does not.
package final class Gazetteer: @unchecked Sendable {
    // @unchecked: everything is set once in `init` and the mapping is read-only (PROT_READ)
    // until `deinit`, so any number of threads may look up at once.
    /// The file it was mapped from.
    package let path: String
    private let base: UnsafeRawPointer
    private let length: Int
    private let placeCount: Int
    private let rows: Int
    private let columns: Int
    private let cellsPerDegree: Double
    private let cellsOffset: Int
    private let placesOffset: Int
    private let regionCount: Int
    private let regionsOffset: Int
    private let stringsOffset: Int
    private let stringsLength: Int

    private static let headerSize = 32
    private static let placeSize = 16
    private static let regionSize = 8

    /// Maps the gazetteer at `path`.
    /// - Throws: `GeocodingError.gazetteerUnavailable` when it is missing or not a gazetteer file.
    package init(path: String) throws {
        // Without blocking, and judged before mapping: a FIFO in its place must not hang the record.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw GeocodingError.gazetteerUnavailable(path: path, reason: ErrorText.posix(errno)) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw GeocodingError.gazetteerUnavailable(path: path, reason: ErrorText.posix(errno)) }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw GeocodingError.gazetteerUnavailable(path: path, reason: "not a regular file")
        }
        guard status.st_size >= Gazetteer.headerSize,
              let mapped = mmap(nil, Int(status.st_size), PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED
        else { throw GeocodingError.gazetteerUnavailable(path: path, reason: "cannot be mapped") }
        func word(_ offset: Int) -> Int { Int(UInt32(littleEndian: mapped.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) }
        let size = Int(status.st_size)
        let magic = Array(UnsafeRawBufferPointer(start: mapped, count: 8))
        let counts = (places: word(8), regions: word(12), strings: word(16), rows: word(20), columns: word(24), perDegree: word(28))
        // Bounded before any arithmetic, so a damaged header cannot overflow it.
        guard magic == Array("GLGAZ001".utf8), (1...10).contains(counts.perDegree),
              counts.rows == 180 * counts.perDegree, counts.columns == 360 * counts.perDegree,
              counts.places <= 10_000_000, (1...1_000_000).contains(counts.regions),
              32 + (counts.rows * counts.columns + 1) * 4 + counts.places * Gazetteer.placeSize
                + counts.regions * Gazetteer.regionSize + counts.strings == size
        else {
            munmap(mapped, size)
            throw GeocodingError.gazetteerUnavailable(path: path, reason: "not a geolocate gazetteer file")
        }
        self.path = path
        base = UnsafeRawPointer(mapped)
        length = size
        placeCount = counts.places
        regionCount = counts.regions
        stringsLength = counts.strings
        rows = counts.rows
        columns = counts.columns
        cellsPerDegree = Double(counts.perDegree)
        cellsOffset = Gazetteer.headerSize
        placesOffset = cellsOffset + (rows * columns + 1) * 4
        regionsOffset = placesOffset + placeCount * Gazetteer.placeSize
        stringsOffset = regionsOffset + regionCount * Gazetteer.regionSize
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), length) }

    /// The gazetteer every command uses, opened on first use:
    /// `$GEOLOCATE_GAZETTEER`, else `../share/geolocate/gazetteer.bin` beside the executable
    /// (where `make install` puts it), else the copy in the source tree it was built from.
    package static func shared(environment: [String: String]) throws -> Gazetteer {
        let override = environment["GEOLOCATE_GAZETTEER"].flatMap { $0.isEmpty ? nil : $0 }
        return try sharedInstances.withLock { instances in
            if let opened = instances[override ?? ""] { return opened }
            let opened = try Gazetteer(path: override ?? defaultLocation())
            instances[override ?? ""] = opened
            return opened
        }
    }

    private static let sharedInstances = Mutex<[String: Gazetteer]>([:])

    private static func defaultLocation() -> String {
        let relative = "share/geolocate/gazetteer.bin"
        // The running binary itself, however it was found (PATH, a symlink, a relative path).
        let executable = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments.first ?? "")
        let installed = executable.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(relative).path
        if FileManager.default.fileExists(atPath: installed) { return installed }
        // Sources/GeolocateCore/Privacy/Gazetteer.swift → the package root.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        return root.appendingPathComponent(relative).path
    }

    /// The place nearest to a point, by great-circle distance; `nil` for a point off the globe.
    package func nearest(latitude: Double, longitude: Double) -> Place? {
        guard placeCount > 0, abs(latitude) <= 90, abs(longitude) <= 180 else { return nil }
        let query = Point(latitude: latitude, longitude: longitude)
        let row0 = row(of: latitude), column0 = column(of: longitude)
        var best: Nearest?
        var ring = 0
        while true {
            scanRing(ring, row0: row0, column0: column0, query: query, best: &best)
            if let best, best.haversine <= Gazetteer.haversine(ofDistance: boundBeyond(ring: ring, row0: row0, column0: column0, query: query)) {
                break
            }
            if ring > max(rows, columns / 2) { break }
            ring += 1
        }
        return best.map { place(at: $0.index) }
    }

    private struct Point {
        let latitude: Double
        let longitude: Double
        let latitudeRadians: Double
        let longitudeRadians: Double
        let cosine: Double
        init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
            latitudeRadians = latitude * .pi / 180
            longitudeRadians = longitude * .pi / 180
            cosine = cos(latitudeRadians)
        }
    }

    private func row(of latitude: Double) -> Int {
        min(max(Int(((latitude + 90) * cellsPerDegree).rounded(.down)), 0), rows - 1)
    }

    private func column(of longitude: Double) -> Int {
        let column = Int(((longitude + 180) * cellsPerDegree).rounded(.down)) % columns
        return column < 0 ? column + columns : column
    }

    /// Looks at every cell whose row or column is `ring` cells from the query's. Column
    /// offsets run over one turn of the globe (-359...360 for 720 columns), so no cell is seen twice.
    private func scanRing(_ ring: Int, row0: Int, column0: Int, query: Point, best: inout Nearest?) {
        let lowest = -(columns - 1) / 2, highest = columns / 2
        func scan(_ row: Int, _ offset: Int) {
            guard offset >= lowest && offset <= highest else { return }
            scanCell(row * columns + ((column0 + offset) % columns + columns) % columns, query: query, best: &best)
        }
        for rowOffset in -ring...ring {
            let row = row0 + rowOffset
            guard row >= 0 && row < rows else { continue }
            if abs(rowOffset) == ring {
                for offset in -ring...ring { scan(row, offset) }
            } else {
                scan(row, -ring)
                scan(row, ring)
            }
        }
    }

    /// The nearest place so far, by haversine `a`, with the latitude and longitude differences
    /// (radians) beyond which no place can beat it: most places are rejected on those before
    /// any trigonometry.
    private struct Nearest {
        var index: Int
        var haversine: Double
        var latitudeLimit: Double
        var longitudeLimit: Double

        init(index: Int, haversine: Double, query: Point) {
            self.index = index
            self.haversine = haversine
            latitudeLimit = 2 * asin(min(1, haversine.squareRoot()))
            // a ≥ cos φq · cos φ · sin²(Δλ/2), and every place that can win has
            // cos φ ≥ cos(|φq| + latitudeLimit).
            let cosines = query.cosine * cos(min(.pi / 2, abs(query.latitudeRadians) + latitudeLimit))
            let ratio = cosines > 0 ? haversine / cosines : .infinity
            longitudeLimit = ratio < 1 ? 2 * asin(ratio.squareRoot()) : .infinity
        }
    }

    private func scanCell(_ cell: Int, query: Point, best: inout Nearest?) {
        let start = word(at: cellsOffset + cell * 4), end = word(at: cellsOffset + (cell + 1) * 4)
        guard start < end, end <= placeCount else { return }
        if let best {
            let south = (-90 + Double(cell / columns) / cellsPerDegree) * .pi / 180
            let north = south + .pi / 180 / cellsPerDegree
            if max(south - query.latitudeRadians, query.latitudeRadians - north) > best.latitudeLimit { return }
        }
        for index in start..<end {
            let offset = placesOffset + index * Gazetteer.placeSize
            let phi = degrees(at: offset) * (.pi / 180), lambda = degrees(at: offset + 4) * (.pi / 180)
            var deltaLambda = abs(lambda - query.longitudeRadians)
            if deltaLambda > .pi { deltaLambda = 2 * .pi - deltaLambda }
            if let best, abs(phi - query.latitudeRadians) > best.latitudeLimit || deltaLambda > best.longitudeLimit { continue }
            let sinPhi = sin((phi - query.latitudeRadians) / 2), sinLambda = sin(deltaLambda / 2)
            let a = sinPhi * sinPhi + query.cosine * cos(phi) * sinLambda * sinLambda
            if best.map({ a < $0.haversine }) ?? true { best = Nearest(index: index, haversine: a, query: query) }
        }
    }

    /// A distance in metres that every place outside the cells scanned so far is at least away.
    private func boundBeyond(ring: Int, row0: Int, column0: Int, query: Point) -> Double {
        let cellDegrees = 1 / cellsPerDegree
        var latitudeGap = Double.infinity
        if row0 - ring > 0 { latitudeGap = query.latitude - (-90 + Double(row0 - ring) * cellDegrees) }
        if row0 + ring < rows - 1 { latitudeGap = min(latitudeGap, -90 + Double(row0 + ring + 1) * cellDegrees - query.latitude) }
        var bound = latitudeGap * .pi / 180 * Geodesy.meanRadius
        var longitudeGap = Double.infinity
        if ring < (columns - 1) / 2 { longitudeGap = query.longitude - (-180 + Double(column0 - ring) * cellDegrees) }
        if ring < columns / 2 { longitudeGap = min(longitudeGap, -180 + Double(column0 + ring + 1) * cellDegrees - query.longitude) }
        if longitudeGap.isFinite {
            // The distance from the point to a meridian that far east or west.
            let radians = min(longitudeGap, 90) * .pi / 180
            bound = min(bound, asin(min(1, query.cosine * sin(radians))) * Geodesy.meanRadius)
        }
        return bound
    }

    private static func haversine(ofDistance metres: Double) -> Double {
        guard metres.isFinite else { return .infinity }
        let half = min(metres / Geodesy.meanRadius, .pi) / 2
        return sin(half) * sin(half)
    }

    private func word(at offset: Int) -> Int {
        Int(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    }

    private func place(at index: Int) -> Place {
        let offset = placesOffset + index * Gazetteer.placeSize
        let region = regionsOffset + min(word(at: offset + 12), regionCount - 1) * Gazetteer.regionSize
        let code = String(decoding: UnsafeRawBufferPointer(start: base + region, count: 2), as: UTF8.self)
        let district = string(at: word(at: region + 4))
        return Place(countryCode: code, district: district.isEmpty ? nil : district, city: string(at: word(at: offset + 8)),
                     latitude: degrees(at: offset), longitude: degrees(at: offset + 4))
    }

    /// A coordinate stored as degrees × 10⁵.
    private func degrees(at offset: Int) -> Double {
        Double(Int32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: Int32.self))) / 1e5
    }

    private func string(at offset: Int) -> String {
        guard offset < stringsLength else { return "" }
        let start = base + stringsOffset + offset
        var count = 0
        while offset + count < stringsLength && start.load(fromByteOffset: count, as: UInt8.self) != 0 { count += 1 }
        return String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    }
}
