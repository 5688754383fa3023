#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Freshet

extension APIClient {
    /// A publisher that sends `endpoint` when subscribed and delivers its decoded value once.
    ///
    /// Each subscription starts its own request when it first receives demand; cancelling the
    /// subscription cancels the task and with it the HTTP exchange. Share it
    /// (`.share()`) to let several subscribers use one request.
    public func publisher<Value>(for endpoint: Endpoint<Value>) -> AnyPublisher<Value, APIError> {
        responsePublisher(for: endpoint).map(\.value).eraseToAnyPublisher()
    }

    /// Like ``publisher(for:)`` but delivers the whole `Response` with its metadata.
    public func responsePublisher<Value>(for endpoint: Endpoint<Value>) -> AnyPublisher<Response<Value>, APIError> {
        TaskPublisher { () async throws(APIError) -> Response<Value> in
            try await self.send(endpoint)
        }.eraseToAnyPublisher()
    }
}

/// A publisher that runs an async operation in a `Task` per subscription.
/// Cancelling the subscription cancels the task.
public struct TaskPublisher<Output: Sendable>: Publisher {
    /// The failure type: always `APIError`.
    public typealias Failure = APIError

    private let operation: @Sendable () async throws(APIError) -> Output

    /// Creates a publisher that runs `operation` once per subscription.
    public init(_ operation: @escaping @Sendable () async throws(APIError) -> Output) {
        self.operation = operation
    }

    /// Attaches a subscriber.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == APIError {
        let subscription = TaskSubscription(subscriber: subscriber, operation: operation)
        subscriber.receive(subscription: subscription)
    }
}

/// The subscription behind ``TaskPublisher``: starts the task on first demand, forwards its
/// result, and cancels the task on `cancel()`.
private final class TaskSubscription<Output: Sendable>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private var subscriber: AnySubscriber<Output, APIError>?
    private var task: Task<Void, Never>?
    private var started = false
    private let operation: @Sendable () async throws(APIError) -> Output

    init<S: Subscriber>(subscriber: S, operation: @escaping @Sendable () async throws(APIError) -> Output)
    where S.Input == Output, S.Failure == APIError {
        self.subscriber = AnySubscriber(subscriber)
        self.operation = operation
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        lock.lock()
        guard !started, subscriber != nil else {
            lock.unlock()
            return
        }
        started = true
        let operation = self.operation
        task = Task { [weak self] in
            let result: Result<Output, APIError>
            do throws(APIError) {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            self?.finish(with: result)
        }
        lock.unlock()
    }

    private func finish(with result: Result<Output, APIError>) {
        lock.lock()
        let subscriber = self.subscriber
        self.subscriber = nil
        lock.unlock()
        guard let subscriber else { return }
        switch result {
        case .success(let value):
            _ = subscriber.receive(value)
            subscriber.receive(completion: .finished)
        case .failure(let error):
            subscriber.receive(completion: .failure(error))
        }
    }

    func cancel() {
        lock.lock()
        let task = self.task
        self.task = nil
        subscriber = nil
        lock.unlock()
        task?.cancel()
    }
}
