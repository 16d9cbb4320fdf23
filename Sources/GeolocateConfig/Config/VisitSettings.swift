/// Stay detection (config `visits.*`): within `radiusMetres` for at least `minDurationMilliseconds`.
package struct VisitSettings: Sendable, Equatable {
    package var radiusMetres: Double
    package var minDurationMilliseconds: Int64

    package init(radiusMetres: Double = ConfigKey.visitsRadius.builtInValue,
                 minDurationMilliseconds: Int64 = ConfigKey.visitsMinDuration.builtInValue) {
        self.radiusMetres = radiusMetres
        self.minDurationMilliseconds = minDurationMilliseconds
    }
}
