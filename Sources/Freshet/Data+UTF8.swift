import Foundation

extension Data {
    /// The UTF-8 bytes of `text`, copied from its contiguous storage.
    ///
    /// `Data(text.utf8)` goes through a generic initializer that asks at run time whether the
    /// view is `ContiguousBytes`; the first such question in a process reads every protocol
    /// conformance record of it (some 600,000 instructions), in a command's serial path.
    package init(utf8 text: String) {
        var text = text
        self = text.withUTF8 { Data(buffer: $0) }
    }
}
