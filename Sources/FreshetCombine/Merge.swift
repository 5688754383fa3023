// Combine's `merge` for OpenCombine, which has none: `Publishers.MergeMany`, `Publishers.Merge`
// and `merge(with:)`, with Combine's names and behaviour, so a pipeline written for Apple's Combine
// (the News app's `merge` of one publisher per story) builds unchanged on Linux. On Apple
// platforms Combine's own are used and this file is empty.
#if !canImport(Combine)
import Foundation
import OpenCombine

extension Publishers {
    /// A publisher that delivers the elements of all its upstream publishers as they arrive,
    /// and finishes when all of them have finished (Combine's `Publishers.MergeMany`).
    ///
    /// It fails with the first failure, cancelling the other upstreams; cancelling it cancels
    /// every upstream. Each upstream is asked for unlimited demand as soon as it is subscribed
    /// (so every request of a merge of HTTP publishers starts at once: bound the fan-out with
    /// `APIClient.fanOutPublisher(_:maxConcurrent:)` or `flatMap(maxPublishers:)`); what the
    /// downstream has not asked for yet is buffered. Elements reach the downstream one at a time,
    /// never concurrently.
    public struct MergeMany<Upstream: Publisher>: Publisher {
        /// The upstream's output.
        public typealias Output = Upstream.Output
        /// The upstream's failure.
        public typealias Failure = Upstream.Failure

        /// The publishers merged.
        public let publishers: [Upstream]

        /// Merges `upstream`.
        public init(_ upstream: Upstream...) {
            publishers = upstream
        }

        /// Merges the publishers of `upstream`.
        public init<S: Swift.Sequence>(_ upstream: S) where S.Element == Upstream {
            publishers = Array(upstream)
        }

        /// Attaches `subscriber`, then subscribes to every upstream.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let merger = MergeSubscription<Output, Failure>(AnySubscriber(subscriber), count: publishers.count)
            subscriber.receive(subscription: merger)
            for (index, publisher) in publishers.enumerated() {
                publisher.subscribe(MergeSide(merger: merger, index: index))
            }
        }

        /// This merge with `other` added.
        public func merge(with other: Upstream) -> MergeMany {
            MergeMany(publishers + [other])
        }
    }

    /// A publisher that delivers the elements of two upstream publishers as they arrive
    /// (Combine's `Publishers.Merge`); see ``MergeMany`` for how it behaves.
    public struct Merge<A: Publisher, B: Publisher>: Publisher where A.Output == B.Output, A.Failure == B.Failure {
        /// The upstreams' output.
        public typealias Output = A.Output
        /// The upstreams' failure.
        public typealias Failure = A.Failure

        /// The first upstream.
        public let a: A
        /// The second upstream.
        public let b: B

        /// Merges `a` and `b`.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        /// Attaches `subscriber`.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            MergeMany(a.eraseToAnyPublisher(), b.eraseToAnyPublisher()).receive(subscriber: subscriber)
        }
    }
}

extension Publisher {
    /// Delivers the elements of this publisher and `other` as they arrive (Combine's
    /// `merge(with:)`).
    public func merge<P: Publisher>(with other: P) -> Publishers.Merge<Self, P>
    where P.Output == Output, P.Failure == Failure {
        Publishers.Merge(self, other)
    }
}

/// The subscriber attached to one upstream of a merge.
private struct MergeSide<Input, Failure: Error>: Subscriber {
    let merger: MergeSubscription<Input, Failure>
    let index: Int
    let combineIdentifier = CombineIdentifier()

    func receive(subscription: any Subscription) {
        merger.attach(subscription, at: index)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        merger.receive(input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        merger.receive(completion, from: index)
    }
}

/// The merge's subscription: buffers what its upstreams send and hands it on as the downstream
/// asks, one call at a time (whichever thread arrives first drains for the others).
private final class MergeSubscription<Output, Failure: Error>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private var downstream: AnySubscriber<Output, Failure>?
    private var upstreams: [(any Subscription)?]
    private var unfinished: Int
    private var demand = Subscribers.Demand.none
    private var buffer: [Output] = []
    private var completion: Subscribers.Completion<Failure>?
    private var draining = false

    init(_ downstream: AnySubscriber<Output, Failure>, count: Int) {
        self.downstream = downstream
        upstreams = Array(repeating: nil, count: count)
        unfinished = count
        if count == 0 { completion = .finished }
    }

    func attach(_ subscription: any Subscription, at index: Int) {
        lock.lock()
        guard downstream != nil, completion == nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        upstreams[index] = subscription
        lock.unlock()
        subscription.request(.unlimited)
    }

    func receive(_ input: Output) {
        lock.lock()
        guard downstream != nil, completion == nil else { return lock.unlock() }
        buffer.append(input)
        lock.unlock()
        drain()
    }

    func receive(_ completion: Subscribers.Completion<Failure>, from index: Int) {
        lock.lock()
        guard downstream != nil, self.completion == nil else { return lock.unlock() }
        upstreams[index] = nil
        var others: [any Subscription] = []
        switch completion {
        case .finished:
            unfinished -= 1
            if unfinished == 0 { self.completion = .finished }
        case .failure:
            // The first failure ends the merge: nothing buffered is delivered after it.
            self.completion = completion
            buffer.removeAll()
            others = upstreams.compactMap { $0 }
            upstreams = upstreams.map { _ in nil }
        }
        lock.unlock()
        for other in others { other.cancel() }
        drain()
    }

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        self.demand += demand
        lock.unlock()
        drain()
    }

    func cancel() {
        lock.lock()
        downstream = nil
        buffer.removeAll()
        let all = upstreams.compactMap { $0 }
        upstreams = upstreams.map { _ in nil }
        lock.unlock()
        for upstream in all { upstream.cancel() }
    }

    /// Delivers what the downstream asked for, then the completion once the buffer is empty.
    /// Only one thread drains at a time; the others leave their work to it.
    private func drain() {
        lock.lock()
        guard !draining else { return lock.unlock() }
        draining = true
        while let downstream {
            if demand > 0, !buffer.isEmpty {
                let value = buffer.removeFirst()
                demand -= 1
                lock.unlock()
                let more = downstream.receive(value)
                lock.lock()
                demand += more
            } else if buffer.isEmpty, let completion {
                self.downstream = nil
                lock.unlock()
                downstream.receive(completion: completion)
                lock.lock()
            } else {
                break
            }
        }
        draining = false
        lock.unlock()
    }
}
#endif
