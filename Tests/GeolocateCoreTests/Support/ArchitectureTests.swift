import Foundation
import Testing

/// docs/ARCHITECTURE.md's table of targets names exactly the targets Package.swift declares,
/// so the map a newcomer reads first cannot drift from the build.
@Suite(.tags(.unit), .timeLimit(.minutes(20))) struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The names in the first column of the table under `## Targets`.
    static func documentedTargets() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Targets\n").dropFirst().first)
        let lines = section.components(separatedBy: "\n## ").first?.split(separator: "\n") ?? []
        return Set(lines.compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        })
    }

    /// The source targets of Package.swift: `.target`, `.executableTarget`, `.systemLibrary`.
    static func declaredTargets() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try Regex(#"\.(target|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)""#)
        return Set(text.matches(of: pattern).compactMap { $0.output[2].substring.map(String.init) })
    }

    @Test func theTargetTableMatchesPackageSwift() throws {
        let documented = try ArchitectureTests.documentedTargets()
        let declared = try ArchitectureTests.declaredTargets()
        #expect(declared.count >= 8, "read only \(declared.sorted()) from Package.swift")
        #expect(documented.subtracting(declared).isEmpty, "in ARCHITECTURE.md, not in Package.swift: \(documented.subtracting(declared).sorted())")
        #expect(declared.subtracting(documented).isEmpty, "in Package.swift, not in ARCHITECTURE.md: \(declared.subtracting(documented).sorted())")
    }
}
