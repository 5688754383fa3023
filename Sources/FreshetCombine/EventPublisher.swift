#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Freshet

extension APIClient {
    /// A publisher of the Server-Sent Events `endpoint` streams: the Combine face of
    /// `APIClient/events(_:options:)`, reconnecting as it does.
    ///
    /// Each subscription opens its own connection when it first receives demand, and hands on an
    /// event only when the subscriber wants one: it holds at most one event ahead, and a
    /// subscriber that stops asking holds the connection still, as a slow reader of the sequence
    /// does. It finishes when the stream ends
    /// (a `204`) and fails with the stream's `APIError`; cancelling the subscription closes the
    /// connection.
    ///
    /// ```swift
    /// client.eventPublisher(for: HackerNews.listChanges(.top))
    ///     .filter { $0.type == "put" || $0.type == "patch" }
    ///     .tryMap { ($0.type, try $0.value()) }
    ///     .sink { … } receiveValue: { type, change in list.apply(type, change) }
    /// ```
    public func eventPublisher<Value>(for endpoint: Endpoint<Value>, options: EventStreamOptions = EventStreamOptions())
        -> AnyPublisher<StreamEvent<Value>, APIError>
    {
        EventPublisher(stream: events(endpoint, options: options)).eraseToAnyPublisher()
    }
}

/// Publishes the events of an ``EventStream``, one per unit of demand.
struct EventPublisher<Value: Sendable>: Publisher {
    typealias Output = StreamEvent<Value>
    typealias Failure = APIError

    let stream: EventStream<Value>

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == APIError {
        subscriber.receive(subscription: EventSubscription(subscriber: subscriber, stream: stream))
    }
}

/// The subscription behind ``EventPublisher``: a task reads the stream while there is demand.
private final class EventSubscription<Value: Sendable>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private var subscriber: AnySubscriber<StreamEvent<Value>, APIError>?
    private var demand = Subscribers.Demand.none
    private var waiting: CheckedContinuation<Bool, Never>?
    private var task: Task<Void, Never>?
    private let stream: EventStream<Value>

    init<S: Subscriber>(subscriber: S, stream: EventStream<Value>) where S.Input == StreamEvent<Value>, S.Failure == APIError {
        self.subscriber = AnySubscriber(subscriber)
        self.stream = stream
    }

    func request(_ more: Subscribers.Demand) {
        guard more > 0 else { return }
        lock.lock()
        guard subscriber != nil else { return lock.unlock() }
        demand += more
        let resume = waiting
        waiting = nil
        if task == nil {
            let stream = self.stream
            task = Task { [weak self] in
                do {
                    for try await event in stream {
                        guard let self, await self.deliver(event) else { return }
                    }
                    self?.complete(.finished)
                } catch {
                    self?.complete(.failure((error as? APIError) ?? APIError.wrapping(error, url: nil)))
                }
            }
        }
        lock.unlock()
        resume?.resume(returning: true)
    }

    /// Hands `event` over once there is demand; `false` when the subscription has ended.
    private func deliver(_ event: StreamEvent<Value>) async -> Bool {
        while true {
            switch take() {
            case .ended:
                return false
            case .deliver(let subscriber):
                let more = subscriber.receive(event)
                lock.withLock { demand += more }
                return true
            case .wait:
                let open = await withCheckedContinuation { park($0) }
                if !open { return false }
            }
        }
    }

    private enum Step {
        case deliver(AnySubscriber<StreamEvent<Value>, APIError>)
        case wait
        case ended
    }

    /// One unit of demand, if there is one.
    private func take() -> Step {
        lock.withLock {
            guard let subscriber else { return .ended }
            guard demand > 0 else { return .wait }
            demand -= 1
            return .deliver(subscriber)
        }
    }

    /// Waits for demand (or the end): `continuation` is resumed by ``request(_:)`` or ``cancel()``.
    private func park(_ continuation: CheckedContinuation<Bool, Never>) {
        let now: Bool? = lock.withLock {
            if subscriber == nil { return false }
            if demand > 0 { return true }
            waiting = continuation
            return nil
        }
        if let now { continuation.resume(returning: now) }
    }

    private func complete(_ completion: Subscribers.Completion<APIError>) {
        lock.lock()
        let subscriber = self.subscriber
        self.subscriber = nil
        lock.unlock()
        subscriber?.receive(completion: completion)
    }

    func cancel() {
        lock.lock()
        let task = self.task
        let resume = waiting
        self.task = nil
        waiting = nil
        subscriber = nil
        lock.unlock()
        resume?.resume(returning: false)
        task?.cancel()
    }
}
