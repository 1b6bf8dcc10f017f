/// Sizes in messages: binary units with one decimal, as `df -h` shows them.
public enum SizeText {
    /// `512 bytes`, `1.5 KiB`, `24.0 MiB`, `2.0 GiB`.
    public static func describe(bytes: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        guard bytes >= 1024 else { return "\(bytes) bytes" }
        var unit = 0
        var scale: Int64 = 1024
        while unit + 1 < units.count && bytes / scale >= 1024 {
            scale *= 1024
            unit += 1
        }
        // Tenths, rounded down: a figure never shows more than there is.
        let tenths = bytes / (scale / 1024) * 10 / 1024
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
