extension ReceiptParser {
    /// The receipt's date: of the dates no label gives another meaning
    /// (valid until, arrival, due), the one labelled as the date, else one
    /// beside a time of day, else the first. A date that reads two ways is
    /// settled by another date on the receipt that reads only one way,
    /// then by `latestDate` (one reading is later than the receipt can be),
    /// then by the setting; failing all three it is offered as ambiguous,
    /// never suggested.
    static func findDate(_ lines: [LineFacts], settings: ReadingSettings) -> (Suggestion?, AmbiguousDate?) {
        struct Found {
            var date: DateText
            var line: LineFacts
            var score: Int
        }
        var found: [Found] = []
        var proven: Set<DateOrder> = []
        for line in lines {
            let other = line.says.has(.otherDate)
            let labelled = line.says.has(.dateLabel)
            for date in line.dates {
                if let order = date.provenOrder, date.separator != "." { proven.insert(order) }
                guard !other else { continue }
                found.append(Found(date: date, line: line, score: (labelled ? 2 : 0) + (line.hasTime ? 1 : 0)))
            }
        }
        let receiptOrder = proven.count == 1 ? proven.first : nil
        func notLater(_ date: String) -> Bool { settings.latestDate.map { date <= $0 } ?? true }
        var ambiguous: AmbiguousDate?
        // Best first: score, then the earlier line.
        for candidate in found.sorted(by: { ($0.score, -$0.line.index) > ($1.score, -$1.line.index) }) {
            let line = candidate.line
            let confidence = (line.dates.isEmpty ? 1 : line.confidences[candidate.date.word]) * (candidate.score >= 2 ? 1 : 0.95)
            let how = candidate.score >= 2 ? "the line labelled as the date" : line.hasTime ? "the date beside a time of day" : "the first date"
            switch candidate.date.reading {
            case .certain(let value):
                guard notLater(value) else { continue }
                return (Suggestion(value, confidence: 0.95 * confidence, line: line.index, note: how), nil)
            case .dotted(let value):
                guard notLater(value) else { continue }
                return (Suggestion(value, confidence: 0.9 * confidence, line: line.index, note: "\(how), written with dots (day first)"), nil)
            case .twoWays(let dayFirst, let monthFirst):
                let readings = [(DateOrder.dayFirst, dayFirst), (.monthFirst, monthFirst)].filter { notLater($0.1) }
                if readings.isEmpty { continue }
                if readings.count == 1 {
                    return (Suggestion(readings[0].1, confidence: 0.85 * confidence, line: line.index,
                                       note: "\(how), read \(readings[0].0.rawValue): the other reading is later than the receipt was received"), nil)
                }
                if let receiptOrder {
                    let value = receiptOrder == .dayFirst ? dayFirst : monthFirst
                    return (Suggestion(value, confidence: 0.85 * confidence, line: line.index,
                                       note: "\(how), read \(receiptOrder.rawValue) as another date on the receipt shows"), nil)
                }
                if let order = settings.dateOrder {
                    let value = order == .dayFirst ? dayFirst : monthFirst
                    return (Suggestion(value, confidence: 0.8 * confidence, line: line.index,
                                       note: "\(how), read \(order.rawValue) as receipt_date_order says"), nil)
                }
                ambiguous = ambiguous ?? AmbiguousDate(dayFirst: dayFirst, monthFirst: monthFirst, line: line.index)
                return (nil, ambiguous)
            }
        }
        return (nil, nil)
    }
}
