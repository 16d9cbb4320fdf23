import Foundation
import Testing

/// docs/ARCHITECTURE.md's table of targets names exactly the targets Package.swift declares,
/// and each target imports only the targets its row names, all above it: the map a newcomer
/// reads first cannot drift from the build, and the layers stay layers.
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

    /// Each row of the table in order: the target and the names in its "depends on" column.
    static func rows() throws -> [(target: String, dependencies: Set<String>)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Targets\n").dropFirst().first)
        let lines = section.components(separatedBy: "\n## ").first?.split(separator: "\n") ?? []
        return lines.filter { $0.hasPrefix("| `") }.compactMap { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { return nil }
            let words = cells[3].split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).map(String.init)
            return (cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), Set(words))
        }
    }

    /// The modules of ours that the Swift files under `directory` import.
    static func importedTargets(under directory: URL, among targets: Set<String>) -> [String: String] {
        var found: [String: String] = [:]
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        let pattern = /^(?:@\w+\s+)*import\s+(?:(?:class|struct|enum|protocol|func|var|let|typealias)\s+)?(\w+)/
        for file in files {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                if let match = line.firstMatch(of: pattern), targets.contains(String(match.1)) {
                    found[String(match.1)] = file.lastPathComponent
                }
            }
        }
        return found
    }

    @Test func eachTargetImportsOnlyTheTargetsAboveItThatItsRowNames() throws {
        let rows = try ArchitectureTests.rows()
        let targets = Set(rows.map(\.target))
        #expect(rows.count >= 12, "read only \(rows.map(\.target)) from the table")
        var above: Set<String> = []
        for row in rows {
            let ours = row.dependencies.intersection(targets)
            #expect(ours.isSubset(of: above), "\(row.target) depends on \(ours.subtracting(above).sorted()), which are not above it")
            let directory = ArchitectureTests.root.appendingPathComponent(row.target == "geolocate-fuzz" ? "Fuzz" : "Sources/\(row.target)")
            for (module, file) in ArchitectureTests.importedTargets(under: directory, among: targets).sorted(by: { $0.key < $1.key }) {
                #expect(row.dependencies.contains(module), "\(row.target)'s \(file) imports \(module), which its row does not name")
            }
            above.insert(row.target)
        }
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
