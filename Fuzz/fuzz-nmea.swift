#if canImport(Glibc)
import Glibc
#endif

// `make fuzz` builds this with the dependency-free NMEA layer (swiftc -sanitize=fuzzer,address)
// and runs it from the gpsd corpus and the examples. Not part of the Swift package.

/// libFuzzer entry: the input as an NMEA stream through the reader and the epoch assembler;
/// a trap, a sanitizer report or a fix out of range is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNMEA(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return 0 }
    defer { close(fds[0]) }
    // Small inputs fit the pipe buffer; the fuzzer keeps inputs under 64 KiB with -max_len.
    _ = write(fds[1], data, min(size, 60_000))
    close(fds[1])
    let stream = NMEAEpochStream(fileDescriptor: fds[0])
    while let epoch = try? stream.next() {
        if let fix = epoch.fix {
            precondition(abs(fix.latitude) <= 90 && abs(fix.longitude) <= 180, "fix out of range")
        }
    }
    return 0
}
