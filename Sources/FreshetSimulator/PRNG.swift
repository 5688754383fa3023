/// SplitMix64: a tiny, fast, seedable PRNG. The simulator never uses Foundation or
/// system randomness, so every generated value is a pure function of the seed. Tests use it
/// too (seeded fuzzing, kill timings), so a failure replays.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private(set) var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) {
        self.state = seed
    }

    /// A generator for one named stream of a seed (e.g. `"github.events"`, repo name),
    /// so streams do not depend on the order in which they are consumed.
    init(seed: UInt64, stream: String, index: UInt64 = 0) {
        var h = Hashing.fnv1a64(stream)
        h ^= index &* 0x9E37_79B9_7F4A_7C15
        var mixer = SplitMix64(seed: seed ^ h)
        self.state = mixer.next() ^ index
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform integer in `range` (modulo bias is irrelevant for test data).
    mutating func int(_ range: Range<Int>) -> Int {
        precondition(!range.isEmpty)
        let width = UInt64(range.upperBound - range.lowerBound)
        return range.lowerBound + Int(next() % width)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) + 1
        return range.lowerBound + Int(next() % width)
    }

    /// Uniform double in [0, 1).
    mutating func double() -> Double {
        Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }

    mutating func chance(_ probability: Double) -> Bool {
        double() < probability
    }

    /// A uniformly chosen element of `values` (which must not be empty).
    public mutating func pick<T>(_ values: [T]) -> T {
        values[int(0..<values.count)]
    }

    /// Index chosen with the given relative weights.
    mutating func weighted(_ weights: [Double]) -> Int {
        let total = weights.reduce(0, +)
        var x = double() * total
        for (i, w) in weights.enumerated() {
            if x < w { return i }
            x -= w
        }
        return weights.count - 1
    }

    /// Heavy-tailed positive integer: mostly small, sometimes large.
    mutating func heavyTail(min: Int, median: Int, max: Int) -> Int {
        let u = Swift.max(double(), 1e-9)
        let v = Double(median) * (1 / u - 1).squareRoot() * 0.9 + Double(min)
        return Swift.min(max, Swift.max(min, Int(v)))
    }

    mutating func hex(_ count: Int) -> String {
        let digits = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(count)
        for _ in 0..<count { s.append(digits[Int(next() & 15)]) }
        return s
    }

    mutating func shuffle<T>(_ values: inout [T]) {
        guard values.count > 1 else { return }
        for i in stride(from: values.count - 1, to: 0, by: -1) {
            values.swapAt(i, int(0...i))
        }
    }
}

/// Non-cryptographic hashes used for seeds and ETags (stable across runs and platforms,
/// unlike `Hasher`).
enum Hashing {
    static func fnv1a64(_ string: String, basis: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        fnv1a64(bytes: string.utf8, basis: basis)
    }

    static func fnv1a64(bytes: some Sequence<UInt8>, basis: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var h = basis
        for b in bytes {
            h ^= UInt64(b)
            h &*= 0x0000_0100_0000_01B3
        }
        return h
    }

    /// 32 lowercase hex digits (the length of the MD5 GitHub uses in its ETags).
    static func hex128(_ string: String) -> String {
        let a = fnv1a64(string)
        let b = fnv1a64(string, basis: 0x6c62_272e_07bb_0142)
        var mixer = SplitMix64(seed: a ^ (b << 1))
        let c = mixer.next() ^ b
        return hex(a) + hex(c)
    }

    static func hex(_ value: UInt64) -> String {
        let s = String(value, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
