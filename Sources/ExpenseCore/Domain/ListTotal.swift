/// The amounts of one currency over every expense a `list` matched, and
/// the part of them not yet on the server: what was entered offline counts.
public struct ListTotal: Sendable, Equatable {
    public var currency: String
    public var count: Int
    /// Exact, with the currency's minor units (`40.00`).
    public var amount: String
    /// Of those, the expenses with pending work and their sum.
    public var pendingCount: Int
    public var pendingAmount: String

    public init(currency: String, count: Int, amount: String, pendingCount: Int, pendingAmount: String) {
        self.currency = currency
        self.count = count
        self.amount = amount
        self.pendingCount = pendingCount
        self.pendingAmount = pendingAmount
    }
}

/// An exact sum of decimal amounts, added as SQL sums them: the signed
/// integer parts, and the signed fraction digits read as an integer, with
/// how many digits those were. Nothing goes through floating point.
public struct DecimalSum: Sendable, Equatable {
    private var units: Int64 = 0
    /// At a scale of 10^`digits`.
    private var fraction: Int64 = 0
    private var digits: Int

    /// - Parameter digits: the fraction digits of the result (the currency's minor units).
    public init(digits: Int) { self.digits = digits }

    /// Adds `units` plus `fraction` at a scale of 10^`fractionDigits`.
    public mutating func add(units: Int64, fraction: Int64, fractionDigits: Int) {
        var fraction = fraction
        if fractionDigits > digits {
            // More digits than the currency has (not a stored amount): keep them all.
            self.fraction *= Self.power(fractionDigits - digits)
            digits = fractionDigits
        }
        fraction *= Self.power(digits - fractionDigits)
        self.units += units
        self.fraction += fraction
        // Carry whole units out, so the fraction never grows past one unit.
        let scale = Self.power(digits)
        self.units += self.fraction / scale
        self.fraction %= scale
    }

    /// `-12.50`, `0.00`, `1500`.
    public var text: String {
        var units = self.units, fraction = self.fraction
        let scale = Self.power(digits)
        if units > 0 && fraction < 0 { units -= 1; fraction += scale }
        if units < 0 && fraction > 0 { units += 1; fraction -= scale }
        let sign = units < 0 || fraction < 0 ? "-" : ""
        let whole = String(units.magnitude)
        guard digits > 0 else { return sign + whole }
        return sign + whole + "." + String(fraction.magnitude).leftPadded(digits)
    }

    private static func power(_ n: Int) -> Int64 {
        (0..<max(0, n)).reduce(1) { result, _ in result * 10 }
    }
}
