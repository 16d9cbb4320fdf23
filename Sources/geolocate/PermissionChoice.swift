import ArgumentParser
import Foundation
import GeolocateModel

/// `--permission fine|coarse|none`: the permissions granted for one call.
enum PermissionChoice: String, ExpressibleByArgument, CaseIterable {
    case fine, coarse, none

    var granted: [Permission] { Permission(rawValue: rawValue).map { [$0] } ?? [] }

    init?(argument: String) {
        guard let choice = RefusedValue.choice(argument, PermissionChoice.init(rawValue:)) else { return nil }
        self = choice
    }
}
