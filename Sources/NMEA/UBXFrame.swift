/// One u-blox UBX frame as it arrived: `B5 62`, class, id, a little-endian length, the
/// payload, and a Fletcher-8 checksum over class to payload (u-blox interface description,
/// "UBX frame structure"), read in place from the reader's buffer.
public struct UBXFrame {
    /// The first sync byte, `µ` in ISO 8859-1.
    public static let sync1: UInt8 = 0xB5
    /// The second sync byte, `b`.
    public static let sync2: UInt8 = 0x62
    /// Sync, class, id and length before the payload.
    public static let headerLength = 6
    /// The longest payload read, in bytes: the longest message geolocate knows of (RXM-RAWX,
    /// 16 + 32 × 255 bytes) fits, and a longer length is taken for line noise, so a frame
    /// never holds more than this much of the reader's buffer.
    public static let maximumPayloadLength = 8192

    public let messageClass: UInt8
    public let messageID: UInt8
    /// The payload, valid only while the reader's callback runs.
    public let payload: UnsafeBufferPointer<UInt8>

    public init(messageClass: UInt8, messageID: UInt8, payload: UnsafeBufferPointer<UInt8>) {
        self.messageClass = messageClass
        self.messageID = messageID
        self.payload = payload
    }

    /// The 8-bit Fletcher checksum of `count` bytes (class, id, length and payload), as
    /// `CK_A | CK_B << 8`.
    ///
    /// In closed form, so the loop carries no dependency from one byte to the next: CK_A is
    /// the sum of the bytes, CK_B the sum of each byte times its distance from the end, both
    /// modulo 256 (the serial form adds CK_A into CK_B after every byte). Sixteen bytes at a
    /// time in 16-bit lanes, whose wrapping keeps both sums right modulo 256: the serial loop
    /// was a quarter of reading UBX beside NMEA.
    @inline(__always)
    public static func checksum(_ bytes: UnsafePointer<UInt8>, count: Int) -> UInt16 {
        var sums = SIMD16<UInt16>()
        var weightedSums = SIMD16<UInt16>()
        let raw = UnsafeRawPointer(bytes)
        let offsets = SIMD16<UInt16>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
        var i = 0
        while i + 16 <= count {
            let lanes = SIMD16<UInt16>(truncatingIfNeeded: raw.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self))
            let weights = SIMD16<UInt16>(repeating: UInt16(truncatingIfNeeded: count - i)) &- offsets
            sums &+= lanes
            weightedSums &+= lanes &* weights
            i += 16
        }
        var sum = UInt32(sums.wrappedSum())
        var weighted = UInt32(weightedSums.wrappedSum())
        while i < count {
            let byte = UInt32(bytes[i])
            sum &+= byte
            weighted &+= byte &* UInt32(truncatingIfNeeded: count - i)
            i += 1
        }
        return UInt16(sum & 0xFF) | UInt16(weighted & 0xFF) << 8
    }
}

/// Little-endian reads from a UBX payload whose length the caller has checked (each message's
/// decoder checks it once, against the least its fields need).
extension UnsafeBufferPointer where Element == UInt8 {
    @inline(__always)
    func littleEndian16(_ offset: Int) -> UInt16 {
        UnsafeRawBufferPointer(self).loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian
    }

    @inline(__always)
    func littleEndian32(_ offset: Int) -> UInt32 {
        UnsafeRawBufferPointer(self).loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
    }
}
