import Foundation

/// A shipped example login hook (`Examples/…/login-hook.sh`) run as a PAM exec hook or login
/// script would: by bash, from the project's root, with the built binary, a config, a state
/// directory and a log to replay; stdout and stderr together.
enum LoginHook {
    static func run(_ script: String, config: String, stateDirectory: String, replay: String) throws -> (status: Int32, text: String) {
        let environment = ProcessInfo.processInfo.environment.merging([
            "GEOLOCATE": GeolocateProcess.binary.path, "GEOLOCATE_CONFIG": config,
            "GEOLOCATE_STATE_DIR": stateDirectory, "GEOLOCATE_REPLAY": replay,
        ]) { $1 }
        let outcome = try Spawn.run(["/bin/bash", script], environment: environment, directory: GeolocateProcess.projectRoot.path,
                                    mergingStderr: true)
        return (outcome.status, String(decoding: outcome.stdout, as: UTF8.self))
    }
}
