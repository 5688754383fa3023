import HTTPTypes

extension HTTPFields {
    /// `self[name]`: the field's value, or the values of several fields joined as HTTPTypes joins
    /// them. One field's value is returned as it is: HTTPTypes' getter joins even one value through
    /// a lazy sequence (~1,700 instructions a field present; its first use a first-time
    /// conformance scan). For the fields read on hot paths: a stored response's freshness and
    /// validators, a body's type and coding, a proxy's answer's `Cache-Control`.
    package func combinedValue(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            guard found == nil else { return self[name] }
            found = field.value
        }
        return found
    }
}
