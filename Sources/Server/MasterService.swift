import Foundation
import Master
import ServiceLifecycle

/// The master (`Dispatcher`) as a service of `stackline serve`: its blocking loop runs on a
/// thread of its own; graceful shutdown (SIGTERM/SIGINT) or cancellation starts its drain,
/// and the service ends when the in-flight jobs have finished or their drain time is over.
struct MasterService: Service {
    let dispatcher: Dispatcher

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                    let thread = Thread { [dispatcher] in
                        do {
                            try dispatcher.run()
                            continuation.resume()
                        } catch {
                            continuation.resume(throwing: error)
                        }
                    }
                    thread.name = "master"
                    thread.start()
                }
            } onCancel: {
                dispatcher.stop(reason: "cancelled")
            }
        } onGracefulShutdown: {
            dispatcher.stop(reason: "shutting down")
        }
    }
}
