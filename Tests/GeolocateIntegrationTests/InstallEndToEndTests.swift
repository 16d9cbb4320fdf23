import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `make install` and `make uninstall` (SPEC §14, issue 27 item 11) in a scratch DESTDIR with
/// PREFIX=/usr: install puts what the program needs at run time and nothing else, without
/// apt-get or pip (stubs that fail and leave a mark); uninstall removes all of it.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct InstallEndToEndTests {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-install-\(UUID().uuidString)")

    /// Runs make in the checkout with `arguments`, with PATH starting at the stubs.
    func make(_ arguments: [String], stubs: URL) throws -> GeolocateProcess.Result {
        var process = GeolocateProcess()
        process.executable = URL(fileURLWithPath: "/usr/bin/make")
        return try process.run(["--no-print-directory"] + arguments, environment: ["PATH": stubs.path + ":/usr/bin:/bin", "MAKEFLAGS": ""])
    }

    /// The regular files and symlinks under `root`, relative to it.
    func files(under root: URL) -> Set<String> {
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
        var found: Set<String> = []
        while let path = walker.nextObject() as? String {
            var info = stat()
            if lstat(root.appendingPathComponent(path).path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR { found.insert(path) }
        }
        return found
    }

    func mode(_ path: URL) -> mode_t {
        var info = stat()
        _ = stat(path.path, &info)
        return info.st_mode & 0o7777
    }

    @Test func installPutsTheRunTimeFilesAndUninstallRemovesThemAll() throws {
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stubs = scratch.appendingPathComponent("stubs")
        let marks = scratch.appendingPathComponent("called")
        try FileManager.default.createDirectory(at: stubs, withIntermediateDirectories: true)
        for tool in ["apt-get", "apt", "pip", "pip3", "python3", "dpkg"] {
            let stub = stubs.appendingPathComponent(tool)
            try Data("#!/bin/sh\necho \"\(tool) $*\" >> '\(marks.path)'\nexit 1\n".utf8).write(to: stub)
            #expect(chmod(stub.path, 0o755) == 0)
        }
        let root = scratch.appendingPathComponent("root")
        let common = ["DESTDIR=\(root.path)", "PREFIX=/usr", "GEOLOCATE_BIN=\(GeolocateProcess.binary.path)"]

        let install = try make(["install"] + common, stubs: stubs)
        #expect(install.status == 0, "\(install.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marks.path),
                "install ran \((try? String(contentsOf: marks, encoding: .utf8)) ?? "")")

        // Listed here, not taken from the Makefile: Examples/ without the demos, which need the checkout.
        let examples = files(under: GeolocateProcess.projectRoot.appendingPathComponent("Examples"))
            .filter { !$0.hasSuffix("demo.sh") }.map { "usr/share/doc/geolocate/examples/" + $0 }
        let expected = Set(["usr/bin/geolocate", "usr/share/man/man1/geolocate.1", "usr/share/geolocate/gazetteer.bin",
                            "usr/share/geolocate/GAZETTEER.md", "usr/share/bash-completion/completions/geolocate",
                            "usr/share/zsh/site-functions/_geolocate", "usr/share/fish/vendor_completions.d/geolocate.fish"] + examples)
        #expect(files(under: root) == expected, "\(files(under: root).symmetricDifference(expected))")
        #expect(examples.contains("usr/share/doc/geolocate/examples/policy/zones.geojson"))
        #expect(mode(root.appendingPathComponent("usr/bin/geolocate")) == 0o755)
        #expect(mode(root.appendingPathComponent("usr/share/doc/geolocate/examples/login-hook.sh")) == 0o755)
        #expect(mode(root.appendingPathComponent("usr/share/doc/geolocate/examples/config.json")) == 0o644)
        let bash = try String(contentsOf: root.appendingPathComponent("usr/share/bash-completion/completions/geolocate"), encoding: .utf8)
        #expect(bash.contains("-F _geolocate geolocate") && !bash.hasPrefix("#!"), "\(bash.prefix(200))")

        // The installed binary runs and finds its gazetteer where install put it: --version at least.
        let version = try GeolocateProcess(executable: root.appendingPathComponent("usr/bin/geolocate")).run(["--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty, "\(version.stderr)")

        let uninstall = try make(["uninstall"] + common, stubs: stubs)
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(files(under: root).isEmpty, "left behind: \(files(under: root).sorted())")
        for directory in ["usr/share/geolocate", "usr/share/doc/geolocate"] {
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(directory).path), "\(directory) is left")
        }
        #expect(!FileManager.default.fileExists(atPath: marks.path))
    }

    /// Without GEOLOCATE_BIN, install builds the release binary, never through scripts/install-deps.
    @Test func installNeverRunsTheTestDependencies() throws {
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let plan = try make(["-n", "install", "DESTDIR=\(scratch.path)", "PREFIX=/usr", "GEOLOCATE_BIN="], stubs: scratch)
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("build -c release"), "\(plan.stdout)")
        for word in ["install-deps", "apt-get", "pip"] { #expect(!plan.stdout.contains(word), "\(word): \(plan.stdout)") }
    }
}
