import Foundation
import GeolocateConfig
import GeolocateDelivery
import Testing

/// docs/ARCHITECTURE.md's table of targets names exactly the targets Package.swift declares,
/// each row exactly the dependencies Package.swift gives its target, and each target imports
/// only the targets its row names, all above it; its table of folders names exactly the
/// folders of each layer, and its data path every format: the map a newcomer reads first
/// cannot drift from the build, and the layers stay layers.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ArchitectureTests {
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

    /// The text of the section of docs/ARCHITECTURE.md under `heading`, up to the next `## `.
    static func section(_ heading: String) throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## \(heading)\n").dropFirst().first, "no section \(heading)")
        return section.components(separatedBy: "\n## ").first ?? ""
    }

    /// Each target's row of `## Targets`: the items of its "depends on" column, each without
    /// what it says in parentheses (`NMEA (re-exported)` is `NMEA`); empty for "—" and "nothing".
    static func dependencyColumns() throws -> [String: Set<String>] {
        var columns: [String: Set<String>] = [:]
        for line in try section("Targets").split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let column = cells[3].replacing(/\([^)]*\)/, with: "")
            let items = column.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet.whitespaces.union(CharacterSet(charactersIn: "`"))) }
            columns[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = Set(items.filter { !["", "—", "nothing"].contains($0) })
        }
        return columns
    }

    /// Each target of Package.swift and the entries of its `dependencies:` list, each as the
    /// names a row may give it (a target's name; a product's, or its package's), and each
    /// `linkedLibrary` as `lib<name>`.
    static func declaredDependencies() throws -> [String: [Set<String>]] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let start = /\.(?:target|executableTarget|systemLibrary|testTarget)\(\s*name:\s*"([^"]+)"/
        let starts = text.matches(of: start)
        var declared: [String: [Set<String>]] = [:]
        for (index, match) in starts.enumerated() {
            let end = index + 1 < starts.count ? starts[index + 1].range.lowerBound : text.endIndex
            let declaration = text[match.range.upperBound..<end]
            var entries: [Set<String>] = []
            if let list = declaration.firstMatch(of: /dependencies:\s*\[((?:[^\[\]]|\[[^\]]*\])*)\]/)?.1 {
                var rest = list
                for product in list.matches(of: /\.product\(\s*name:\s*"([^"]+)",\s*package:\s*"([^"]+)"\s*\)/) {
                    entries.append([String(product.1), String(product.2)])
                    rest = rest.replacingOccurrences(of: String(list[product.range]), with: "")[...]
                }
                for target in rest.matches(of: /"([^"]+)"/) { entries.append([String(target.1)]) }
            }
            for library in declaration.matches(of: /\.linkedLibrary\("([^"]+)"\)/) { entries.append(["lib" + library.1]) }
            declared[String(match.1)] = entries
        }
        return declared
    }

    @Test func eachRowNamesExactlyTheDependenciesPackageSwiftGivesItsTarget() throws {
        let columns = try ArchitectureTests.dependencyColumns()
        let declared = try ArchitectureTests.declaredDependencies()
        #expect(columns.count >= 12, "read only \(columns.keys.sorted()) from the table")
        #expect(declared["GeolocateSpool"]?.contains(["GRDB", "GRDB.swift"]) == true, "read \(declared) from Package.swift")
        for (target, named) in columns.sorted(by: { $0.key < $1.key }) {
            let entries = try #require(declared[target], "\(target) is not in Package.swift")
            let known = entries.reduce(Set(["libc"]), { $0.union($1) })
            for name in named.sorted() where !known.contains(name) {
                Issue.record("\(target)'s row names \(name), which Package.swift does not give it")
            }
            for entry in entries where entry.isDisjoint(with: named) {
                Issue.record("\(target)'s row does not name \(entry.sorted().joined(separator: " or ")), which Package.swift gives it")
            }
        }
    }

    /// The rows of `## The layers' folders`: each target and the folders listed for it.
    static func documentedFolders() throws -> [String: Set<String>] {
        var folders: [String: Set<String>] = [:]
        for line in try section("The layers' folders").split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let target = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let folder = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "`/"))
            folders[target, default: []].insert(folder)
        }
        return folders
    }

    /// The folders directly under `Sources/<target>/` that hold Swift files, for every target.
    static func sourceFolders() throws -> [String: Set<String>] {
        let manager = FileManager.default
        let sources = root.appendingPathComponent("Sources")
        var folders: [String: Set<String>] = [:]
        for target in try manager.contentsOfDirectory(atPath: sources.path) {
            let directory = sources.appendingPathComponent(target)
            for folder in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
                var isDirectory: ObjCBool = false
                let path = directory.appendingPathComponent(folder).path
                guard manager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue,
                      let files = manager.enumerator(atPath: path)?.compactMap({ $0 as? String }),
                      files.contains(where: { $0.hasSuffix(".swift") }) else { continue }
                folders[target, default: []].insert(folder)
            }
        }
        return folders
    }

    @Test func theFolderTableListsEveryFolderOfEachLayerAndNoOther() throws {
        let documented = try ArchitectureTests.documentedFolders()
        let existing = try ArchitectureTests.sourceFolders()
        #expect(documented.count >= 5, "read only \(documented.keys.sorted()) from the table")
        for target in Set(documented.keys).union(existing.keys).sorted() {
            let listed = documented[target] ?? []
            let present = existing[target] ?? []
            #expect(listed.subtracting(present).isEmpty, "listed for \(target), not in Sources/\(target): \(listed.subtracting(present).sorted())")
            #expect(present.subtracting(listed).isEmpty, "in Sources/\(target), not in the folder table: \(present.subtracting(listed).sorted())")
        }
    }

    @Test func theDataPathNamesEveryFormat() throws {
        let diagram = try ArchitectureTests.section("The data path")
        func words(from start: String, to end: String) throws -> Set<String> {
            let from = try #require(diagram.range(of: start), "no \(start) in the data path")
            let to = try #require(diagram.range(of: end, range: from.upperBound..<diagram.endIndex), "no \(end) after \(start)")
            return Set(diagram[from.upperBound..<to.lowerBound].split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "-" }).map(String.init))
        }
        let printed = try words(from: "RecordFormat", to: "EndpointFormat.body")
        for format in RecordFormat.allCases {
            #expect(printed.contains(format.rawValue), "the data path's RecordFormat does not name \(format.rawValue)")
        }
        let sent = try words(from: "EndpointFormat.body", to: "one byte buffer")
        for format in EndpointFormat.allCases {
            #expect(sent.contains(format.rawValue), "the data path's EndpointFormat does not name \(format.rawValue)")
        }
    }
}
