/// `Fix` and the NMEA parser are the core's vocabulary: whoever imports the core sees them.
@_exported import NMEA
