import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

/// What `geolocate export` writes (SPEC §12): GPX 1.1, GeoJSON (RFC 7946) or CSV (RFC 4180).
///
/// Each format is written in three parts, so an export streams: `header`, one `point` per
/// record, `footer`. A record without a fix (a timeout) has no point. One whose coordinates
/// privacy withholds has none in GPX and GeoJSON, which need them, and is a CSV row with
/// empty coordinates, which still tells its time and what the policy lets through (city,
/// country). A field the record withholds is left out (GPX, GeoJSON) or empty (CSV).
package enum ExportFormat: String, Sendable, CaseIterable {
    /// Events (trigger records: login, payment…) as `wpt` waypoints named by their action,
    /// then one `trk/trkseg` of `trkpt` for track's records; each point with `ele` (metres
    /// above the WGS84 ellipsoid), `time`, `desc` or `name` (the record's id) and `fix`.
    /// GPX 1.1 puts every `wpt` before the `trk`, and the exporter sorts both by time.
    case gpx
    /// A FeatureCollection of Points `[lon, lat, alt]` whose properties are the record's fields.
    case geojson
    /// One row per point under a header row, CRLF line ends, fields quoted when they must be.
    case csv

    /// The start of the file.
    package var header: String {
        switch self {
        case .gpx:
            return """
                <?xml version="1.0" encoding="UTF-8"?>
                <gpx version="1.1" creator="geolocate \(Defaults.version)" xmlns="http://www.topografix.com/GPX/1/1" \
                xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
                xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">

                """
        case .geojson:
            return "{\"type\":\"FeatureCollection\",\"features\":[\n"
        case .csv:
            return ExportFormat.csvColumns.map(\.name).joined(separator: ",") + "\r\n"
        }
    }

    /// The end of the file.
    package var footer: String {
        switch self {
        case .gpx: return "</gpx>\n"
        case .geojson: return "\n]}\n"
        case .csv: return ""
        }
    }

    /// What opens and closes GPX's one track, around its `trkpt`s and after every `wpt`.
    static let gpxTrackStart = "<trk><name>geolocate</name><trkseg>\n"
    static let gpxTrackEnd = "</trkseg></trk>\n"

    /// Whether `record` is an event, a waypoint in GPX: any record but track's.
    package static func isEvent(_ record: Record) -> Bool { record.action != Record.trackAction }

    /// Whether the format has a point for a record whose coordinates are withheld: CSV only.
    package var keepsRecordsWithoutCoordinates: Bool { self == .csv }

    /// `record` as one point, after `index` points already written; `nil` when it has no fix,
    /// or no coordinates and the format needs them.
    package func point(_ record: Record, index: Int) -> String? {
        guard let fix = record.fix else { return nil }
        guard keepsRecordsWithoutCoordinates || record.attributes.isSuperset(of: [.latitude, .longitude]) else { return nil }
        switch self {
        case .gpx: return ExportFormat.gpxPoint(record, fix)
        case .geojson: return (index > 0 ? ",\n" : "") + ExportFormat.feature(record, fix)
        case .csv: return ExportFormat.csvColumns.map { ExportFormat.csvField($0.value(record, fix)?.text ?? "") }.joined(separator: ",") + "\r\n"
        }
    }

    private static func gpxPoint(_ record: Record, _ fix: Fix) -> String {
        let allowed = record.attributes
        let element = isEvent(record) ? "wpt" : "trkpt"
        var text = "<\(element) lat=\"\(JSONWriter.decimal(fix.latitude, digits: 7))\" lon=\"\(JSONWriter.decimal(fix.longitude, digits: 7))\">"
        if allowed.contains(.altitude), let altitude = fix.altitudeHAE, altitude.isFinite {
            text += "<ele>\(JSONWriter.decimal(altitude, digits: 1))</ele>"
        }
        if allowed.contains(.recordTimestamp) { text += "<time>\(TimeText.iso8601WithMilliseconds(fix.timestamp))</time>" }
        // A waypoint is named by its action (what happened there); a track point by its id.
        text += element == "wpt" ? "<name>\(xmlEscaped(record.action))</name><desc>\(xmlEscaped(record.id))</desc>"
            : "<name>\(xmlEscaped(record.id))</name><desc>\(xmlEscaped(record.action))</desc>"
        if allowed.contains(.fixMode) { text += "<fix>\(fix.mode == .threeD ? "3d" : "2d")</fix>" }
        return text + "</\(element)>\n"
    }

    private static func feature(_ record: Record, _ fix: Fix) -> String {
        let allowed = record.attributes
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.string("type", "Feature")
        json.string("id", record.id)
        json.beginObject("geometry")
        json.string("type", "Point")
        json.beginArray("coordinates")
        json.number(nil, fix.longitude, digits: 7)
        json.number(nil, fix.latitude, digits: 7)
        if allowed.contains(.altitude), let altitude = fix.altitudeHAE, altitude.isFinite { json.number(nil, altitude, digits: 1) }
        json.endArray()
        json.endObject()
        json.beginObject("properties")
        for column in csvColumns where column.name != "latitude" && column.name != "longitude" {
            switch column.value(record, fix) {
            case .text(let text)?: json.string(column.name, text)
            case .number(let number, let digits)?: json.number(column.name, number, digits: digits)
            case .boolean(let value)?: json.bool(column.name, value)
            case nil: break
            }
        }
        json.endObject()
        json.endObject()
        return json.text
    }

    /// A column of the CSV, and a property of GeoJSON: its name and how it is read from a record.
    struct Column: Sendable {
        var name: String
        var value: @Sendable (Record, Fix) -> Value?
    }

    /// A field's value: text, a number written with `digits` decimals (a JSON number in
    /// GeoJSON, its decimal text in CSV), or a boolean (`true`/`false` in both).
    enum Value {
        case text(String)
        case number(Double, digits: Int)
        case boolean(Bool)

        var text: String {
            switch self {
            case .text(let text): return text
            case .number(let number, let digits): return JSONWriter.decimal(number, digits: digits)
            case .boolean(let value): return value ? "true" : "false"
            }
        }
    }

    /// The CSV's columns in order; GeoJSON's properties are the same but the coordinates.
    static let csvColumns: [Column] = {
        func number(_ name: String, _ attribute: LocationAttributes, digits: Int, _ value: @escaping @Sendable (Fix) -> Double?) -> Column {
            Column(name: name) { record, fix in
                guard record.attributes.contains(attribute), let number = value(fix), number.isFinite else { return nil }
                return .number(number, digits: digits)
            }
        }
        func text(_ name: String, _ value: @escaping @Sendable (Record, Fix) -> String?) -> Column {
            Column(name: name) { record, fix in value(record, fix).map(Value.text) }
        }
        /// A receiver verdict (SPEC §15): left empty when unknown, never written as false.
        func verdict(_ name: String, _ part: KeyPath<Signals, Bool?> & Sendable) -> Column {
            Column(name: name) { record, _ in record.signals?[keyPath: part].map(Value.boolean) }
        }
        func address(_ name: String, _ attribute: LocationAttributes, _ part: KeyPath<Address, String?> & Sendable) -> Column {
            text(name) { record, _ in record.attributes.contains(attribute) ? record.address?[keyPath: part] : nil }
        }
        return [
            text("id") { record, _ in record.id },
            text("time") { record, fix in record.attributes.contains(.recordTimestamp) ? TimeText.iso8601WithMilliseconds(fix.timestamp) : nil },
            number("latitude", .latitude, digits: 7) { $0.latitude },
            number("longitude", .longitude, digits: 7) { $0.longitude },
            number("altitude", .altitude, digits: 1) { $0.altitudeHAE },
            number("accuracy", .accuracy, digits: 1) { $0.horizontalAccuracy },
            number("verticalAccuracy", .verticalAccuracy, digits: 1) { $0.verticalAccuracy },
            number("speed", .speed, digits: 2) { $0.speed },
            number("course", .course, digits: 1) { $0.course },
            text("fixMode") { record, fix in record.attributes.contains(.fixMode) ? fix.mode.rawValue : nil },
            text("provider") { record, fix in record.attributes.contains(.provider) ? fix.provider.rawValue : nil },
            text("action") { record, _ in record.action },
            text("triggeredAt") { record, _ in TimeText.iso8601WithMilliseconds(record.triggeredAt) },
            text("locationSource") { record, _ in record.origin?.rawValue },
            address("countryCode", .countryCode, \.countryCode),
            address("district", .district, \.district),
            address("city", .city, \.city),
            address("street", .street, \.street),
            address("streetNumber", .streetNumber, \.streetNumber),
            verdict("gnssAuthenticated", \.gnssAuthenticated),
            verdict("receiverSpoofing", \.receiverSpoofing),
            verdict("receiverJamming", \.receiverJamming),
            verdict("osnmaReplay", \.osnmaReplay),
        ]
    }()

    /// A CSV field, quoted when it holds a comma, a quote, CR or LF (RFC 4180 §2).
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Text for an XML element's content.
    static func xmlEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
