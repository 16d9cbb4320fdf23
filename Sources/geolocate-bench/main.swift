// geolocate-bench FILE: replays an NMEA log through the parser and epoch assembler as fast as
// possible and prints one JSON line of counts and time, for scripts/bench.
import Foundation
import GeolocateCore

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: geolocate-bench FILE.nmea\n".utf8))
    exit(64)
}
let fd = open(CommandLine.arguments[1], O_RDONLY)
guard fd >= 0 else {
    FileHandle.standardError.write(Data("geolocate-bench: cannot open \(CommandLine.arguments[1])\n".utf8))
    exit(66)
}
let started = Date()
let stream = NMEAEpochStream(fileDescriptor: fd)
var epochs = 0, fixes = 0
while let epoch = try stream.next() {
    epochs += 1
    if epoch.fix != nil { fixes += 1 }
}
let seconds = Date().timeIntervalSince(started)
let s = stream.statistics
print("{\"sentences\":\(s.accepted),\"skipped\":\(s.skipped),\"unknown\":\(s.unknown),\"bytes\":\(s.bytes),\"epochs\":\(epochs),\"fixes\":\(fixes),\"seconds\":\(seconds)}")
