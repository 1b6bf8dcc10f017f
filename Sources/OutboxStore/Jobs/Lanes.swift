/// Taking turns between two queues.
enum Lanes {
    /// Alternates `a` and `b` (starting with `a`) until `limit`, then takes
    /// whatever one has left.
    static func interleave<T>(_ a: [T], _ b: [T], limit: Int) -> [T] {
        var result: [T] = []
        var i = 0, j = 0
        while result.count < limit && (i < a.count || j < b.count) {
            if i < a.count { result.append(a[i]); i += 1 }
            if result.count < limit && j < b.count { result.append(b[j]); j += 1 }
        }
        return result
    }
}
