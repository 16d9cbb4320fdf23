import GeolocateModel

/// The `signals` and `policy` objects (SPEC §10), in the style of the record that carries them.
package enum SignalsEncoder {
    /// How figures are written: the Mosaic record's decimal strings and camelCase, or
    /// OpenLocate's numbers and snake_case.
    package enum Style {
        case mosaic
        case openLocate

        package func key(_ camelCase: String, _ snakeCase: String) -> String { self == .mosaic ? camelCase : snakeCase }
    }

    package static func write(_ signals: Signals, style: Style, to json: inout JSONWriter) {
        func figure(_ key: String, _ value: Double?, digits: Int) {
            switch style {
            case .mosaic:
                if let value { json.decimalStringIfPresent(key, value, digits: digits) } else { json.null(key) }
            case .openLocate:
                json.number(key, value, digits: digits)
            }
        }
        json.beginObject("signals")
        if let previous = signals.previous {
            json.beginObject("previous")
            json.integer(style.key("recordTimestamp", "utc_timestamp"), style == .mosaic ? previous.recordTimestamp : previous.recordTimestamp / 1000)
            if let distance = previous.distance { figure("distance", distance, digits: 1) }
            json.stringIfPresent(style.key("countryCode", "country_code"), previous.countryCode)
            json.endObject()
        } else {
            json.null("previous")
        }
        figure(style.key("impliedSpeed", "implied_speed"), signals.impliedSpeed, digits: 1)
        json.bool("jumped", signals.jumped)
        json.bool(style.key("countryChanged", "country_changed"), signals.countryChanged)
        json.bool("stale", signals.stale)
        json.bool("inaccurate", signals.inaccurate)
        json.bool("replayed", signals.replayed)
        json.integer(style.key("clockSkewMs", "clock_skew_ms"), signals.clockSkewMilliseconds)
        json.bool(style.key("clockSkewed", "clock_skewed"), signals.clockSkewed)
        if let synchronized = signals.systemClockSynchronized {
            json.bool(style.key("systemClockSynchronized", "system_clock_synchronized"), synchronized)
        }
        json.bool(style.key("estimatedFix", "estimated_fix"), signals.estimatedFix)
        if let satellites = signals.satellites {
            json.beginObject("satellites")
            json.integer("used", satellites.used.map { Int64($0) })
            figure(style.key("cn0Mean", "cn0_mean"), satellites.cn0Mean, digits: 1)
            figure(style.key("cn0StdDev", "cn0_std_dev"), satellites.cn0StdDev, digits: 1)
            json.endObject()
        } else {
            json.null("satellites")
        }
        json.bool(style.key("spoofingSuspected", "spoofing_suspected"), signals.spoofingSuspected)
        // Unknown is said as null, never left out to look like "not jammed" (SPEC §15): gpsd
        // before 3.26 reports no `jam`; `jammed` comes only with a figure.
        if let jamming = signals.jamming {
            json.integer("jamming", Int64(jamming))
            json.bool("jammed", signals.jammed)
        } else {
            json.null("jamming")
        }
        if let antenna = signals.antenna {
            json.string("antenna", antenna.rawValue)
            json.bool(style.key("antennaFault", "antenna_fault"), signals.antennaFault)
        }
        if let power = signals.antennaPower { json.string(style.key("antennaPower", "antenna_power"), power.rawValue) }
        // The receiver's own verdicts through UBX: null when it said nothing, never a false all-clear.
        json.bool(style.key("gnssAuthenticated", "gnss_authenticated"), orNull: signals.gnssAuthenticated)
        json.bool(style.key("receiverSpoofing", "receiver_spoofing"), orNull: signals.receiverSpoofing)
        json.bool(style.key("receiverJamming", "receiver_jamming"), orNull: signals.receiverJamming)
        json.bool(style.key("osnmaReplay", "osnma_replay"), orNull: signals.osnmaReplay)
        json.strings("reasons", signals.reasons)
        json.endObject()
    }

    package static func write(_ policy: PolicyResult, style: Style, to json: inout JSONWriter) {
        json.beginObject("policy")
        json.string("decision", policy.decision.rawValue)
        json.string("zone", policy.zone)
        json.string("reason", policy.reason)
        let key = style.key("boundaryDistance", "boundary_distance")
        switch style {
        case .mosaic:
            if let distance = policy.boundaryDistance { json.decimalStringIfPresent(key, distance, digits: 1) } else { json.null(key) }
        case .openLocate:
            json.number(key, policy.boundaryDistance, digits: 1)
        }
        json.endObject()
    }
}
