import GeolocateModel

/// The `privacy.*` settings: what records may tell about where the device is.
package struct PrivacyPolicy: Sendable, Equatable {
    package var precision: LocationPrecision
    /// A country code is reported only from a fix whose 68 % radius is within this many metres.
    package var accuracyThresholdMetres: Double
    /// Reported instead of the country code when the fix is not accurate enough (or its accuracy unknown).
    package var countryCodeReplacement: String
    /// `privacy.locationAttributeFilter`: the fields let through, whatever the precision.
    package var attributeFilter: LocationAttributes

    package init(precision: LocationPrecision = ConfigKey.privacyPrecision.builtInValue,
                 accuracyThresholdMetres: Double = ConfigKey.privacyAccuracyThreshold.builtInValue,
                 countryCodeReplacement: String = ConfigKey.privacyCountryCodeReplacement.builtInValue,
                 attributeFilter: LocationAttributes = ConfigKey.privacyLocationAttributeFilter.builtInValue) {
        self.precision = precision
        self.accuracyThresholdMetres = accuracyThresholdMetres
        self.countryCodeReplacement = countryCodeReplacement
        self.attributeFilter = attributeFilter
    }

    /// The fields a location object may carry: the precision's, narrowed by the filter.
    package var attributes: LocationAttributes {
        precision.attributes.intersection(attributeFilter)
    }

    /// The country code to report for a fix: the code when the fix is accurate enough.
    package func countryCode(_ code: String, for fix: Fix) -> String {
        guard let accuracy = fix.horizontalAccuracy, accuracy <= accuracyThresholdMetres else { return countryCodeReplacement }
        return code
    }
}
